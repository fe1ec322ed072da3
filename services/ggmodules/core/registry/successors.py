"""Transfer successors as Registry keeps them: reserved (invisible), then completed or released.

Transfer reserves the successor's agent id before ModuleStore hands anything over, completes it with the
roster the handover produced, or releases it when the transfer rolls back. A predecessor has one successor.
"""

from __future__ import annotations

from ggmodules.core.errors import FailedPrecondition, InvalidArgument, Reason
from ggmodules.core.registry.runs import RunSpec
from ggmodules.core.vocabulary import TRANSFER_CAUSES, Cause


def check_cause(cause: str) -> Cause:
    """The transfer cause a ReserveSuccessor names."""
    if cause not in TRANSFER_CAUSES:
        raise InvalidArgument(
            f"cause: {cause!r} is not a transfer; a successor is reserved for a 'transition' or an 'exec'",
            metadata={"field": "cause", "value": cause},
            violations=[("cause", "one of 'transition', 'exec'")],
        )
    return Cause(cause)


def check_successor(spec: RunSpec, run_id: str, profile: str, fsm_state: str) -> None:
    """The successor's profile is one of the run's, and its state, when given, one of the FSM's."""
    spec.profile(profile, run_id)
    if not fsm_state:
        return
    if spec.fsm is None:
        raise InvalidArgument(
            f"fsm_state: run {run_id} has no FSM; reserve the successor without a state",
            metadata={"field": "fsm_state"}, violations=[("fsm_state", "the run has no FSM")],
        )
    if spec.fsm.state(fsm_state) is None:
        listed = ", ".join(s.name for s in spec.fsm.states)
        raise InvalidArgument(
            f"fsm_state: {fsm_state!r} is not a state of run {run_id}'s FSM; its states are {listed}",
            metadata={"field": "fsm_state", "value": fsm_state},
            violations=[("fsm_state", "not a state of the run's FSM")],
        )


def handed_on(run_id: str, predecessor: str, successor: str, completed: bool) -> FailedPrecondition:
    how = "handed its modules on to" if completed else "is already being handed on to"
    return FailedPrecondition(
        f"agent {predecessor} {how} {successor}; an agent has one successor. Transfer from {successor} "
        "instead",
        reason=Reason.HANDED_ON,
        metadata={"run_id": run_id, "agent_id": predecessor, "successor_agent_id": successor},
    )


def not_reserved(run_id: str, agent_id: str, why: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"agent {agent_id} of run {run_id} {why}",
        metadata={"run_id": run_id, "agent_id": agent_id},
    )
