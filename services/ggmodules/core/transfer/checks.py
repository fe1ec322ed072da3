"""What a transfer checks before it plans: the predecessor may hand on, and the edge or profile exists."""

from __future__ import annotations

from ggmodules.core.errors import FailedPrecondition, Reason
from ggmodules.core.registry.fsm import Fsm
from ggmodules.core.transfer.plan import Edge


def require_not_handed_on(run_id: str, agent_id: str, successor_agent_id: str) -> None:
    if successor_agent_id:
        raise FailedPrecondition(
            f"agent {agent_id} already handed its modules on to {successor_agent_id}; "
            f"transfer from {successor_agent_id} instead",
            reason=Reason.HANDED_ON,
            metadata={"run_id": run_id, "agent_id": agent_id, "successor_agent_id": successor_agent_id},
        )


def resolve_edge(
    run_id: str, fsm: Fsm | None, agent_id: str, fsm_state: str, to_state: str
) -> tuple[Edge, str]:
    """The edge from the agent's state to `to_state`, and the profile its target state runs."""
    if fsm is None or not fsm_state:
        why = f"run {run_id} has no FSM" if fsm is None else f"agent {agent_id} was opened outside the FSM"
        raise FailedPrecondition(
            f"agent {agent_id} is not in an FSM state, so it cannot take a transition ({why}); "
            "use Exec to hand its modules to another profile",
            reason=Reason.NOT_IN_FSM,
            metadata={"run_id": run_id, "agent_id": agent_id},
        )
    edge = next((e for e in fsm.edges if e.source == fsm_state and e.target == to_state), None)
    target = fsm.state(to_state)
    if edge is None or target is None:
        outgoing = [e.target for e in fsm.edges if e.source == fsm_state]
        listed = ", ".join(repr(t) for t in outgoing) or "none: it is a final state"
        raise FailedPrecondition(
            f"the FSM has no edge from {fsm_state!r} to {to_state!r}; the edges out of {fsm_state!r} "
            f"lead to {listed}",
            reason=Reason.NO_SUCH_EDGE,
            metadata={"run_id": run_id, "from_state": fsm_state, "to_state": to_state,
                      "edges": ",".join(outgoing)},
        )
    return Edge(edge.source, edge.target, edge.carry), target.profile
