"""What a transfer checks before it plans: the predecessor may hand on, the edge or profile exists, and an
exec's successor can take every edge out of the FSM state it keeps."""

from __future__ import annotations

from ggmodules.core.errors import FailedPrecondition, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.registry.fsm import Fsm
from ggmodules.core.registry.profiles import Profile
from ggmodules.core.transfer.notes import listing
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


def require_edges_takeable(
    run_id: str, fsm: Fsm | None, agent_id: str, fsm_state: str, successor: Profile, board_enabled: bool
) -> None:
    """An exec successor keeps its predecessor's FSM state (R20 leaves the state to us). Launch validation
    (R25) proved the state's own profile holds every kind its outgoing edges carry; the successor runs
    another profile, so it is held to the same rule here, before anything changes. Without this a later
    transition along such an edge would meet a kind the successor does not hold, and a sequence of valid
    calls would end the run internal_error (R26 is for the suite's own defects only). The board counts as
    held in a run that has one."""
    if fsm is None or not fsm_state:
        return
    lacking: dict[Kind, list[str]] = {}
    for edge in fsm.edges:
        if edge.source != fsm_state:
            continue
        for kind in edge.carry:
            held = board_enabled if kind is Kind.BOARD else successor.holds(kind)
            if not held:
                lacking.setdefault(kind, []).append(edge.target)
    if not lacking:
        return
    kinds = [k for k in Kind if k in lacking]
    words = listing([k.word for k in kinds])
    edges = "; ".join(
        f"{k.word} by the edge{'s' if len(lacking[k]) > 1 else ''} to "
        f"{listing([repr(t) for t in lacking[k]])}"
        for k in kinds
    )
    raise FailedPrecondition(
        f"agent {agent_id} is in FSM state {fsm_state!r}, and an exec successor keeps that state, but "
        f"profile {successor.name!r} does not enable {words}, which the state's edges carry ({edges}): the "
        f"successor could never take those edges. Exec to a profile that enables {words}, or exec with "
        "leave_fsm to run the successor outside the FSM; nothing was changed",
        reason=Reason.EXEC_LACKS_EDGE_KINDS,
        metadata={
            "run_id": run_id, "agent_id": agent_id, "fsm_state": fsm_state, "profile": successor.name,
            "kinds": ",".join(k.word for k in kinds),
            "edges": ",".join(sorted({t for targets in lacking.values() for t in targets})),
        },
    )
