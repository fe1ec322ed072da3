"""Runs: a launch-validated set of profiles, the board switch and an optional FSM; ids; status checks."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from ggmodules.core.errors import FailedPrecondition, InvalidArgument, NotFound, Reason
from ggmodules.core.registry.fsm import Fsm, FsmInput, validate_fsm
from ggmodules.core.registry.profiles import Profile, ProfileInput, validate_profiles
from ggmodules.core.vocabulary import RunStatus

MAX_RUN_NAME_CHARS = 200


@dataclass(frozen=True)
class RunSpec:
    """What a run was launched with; it never changes afterwards."""

    name: str
    profiles: tuple[Profile, ...]
    board_enabled: bool
    fsm: Fsm | None = None

    def profile(self, name: str, run_id: str) -> Profile:
        found = next((p for p in self.profiles if p.name == name), None)
        if found is None:
            listed = ", ".join(p.name for p in self.profiles)
            raise NotFound(
                f"profile {name!r} is not configured in run {run_id}; its profiles are {listed}",
                reason=Reason.PROFILE_NOT_FOUND,
                metadata={"run_id": run_id, "profile": name},
            )
        return found


def validate_run(
    name: str, profiles: Sequence[ProfileInput], board_enabled: bool, fsm: FsmInput | None
) -> RunSpec:
    """Launch validation: profiles first (first problem refused), then the FSM (every problem at once)."""
    if len(name) > MAX_RUN_NAME_CHARS:
        raise InvalidArgument(
            f"name: a run name is at most {MAX_RUN_NAME_CHARS} characters",
            metadata={"field": "name"}, violations=[("name", f"at most {MAX_RUN_NAME_CHARS} characters")],
        )
    checked = validate_profiles(profiles)
    machine = None if fsm is None or fsm.empty else validate_fsm(fsm, checked, board_enabled)
    return RunSpec(name, checked, board_enabled, machine)


def new_run_id() -> str:
    return f"run-{secrets.token_hex(6)}"


def agent_id_for(profile: str, n: int) -> str:
    """`<profile>-<n>`, n counting from 0 per profile per run, minted once."""
    return f"{profile}-{n}"


def require_running(
    run_id: str, status: RunStatus, why: str = "instances open only in a running run (create a new run)"
) -> None:
    if status is not RunStatus.RUNNING:
        raise FailedPrecondition(
            f"run {run_id} is {status.word}; {why}",
            reason=Reason.RUN_NOT_RUNNING,
            metadata={"run_id": run_id, "status": status.word},
        )


def resolve_open(spec: RunSpec, run_id: str, profile: str, fsm_state: str) -> tuple[Profile, str]:
    """The profile a root instance runs and the FSM state it opens in.

    With an FSM, a root opens in `fsm_state`. When none is named it opens in the initial state if that
    state runs the profile asked for (or none was asked for), else in the first state that runs it; a
    profile no state runs opens outside the FSM.
    """
    fsm = spec.fsm
    if fsm is None:
        if fsm_state:
            raise InvalidArgument(
                f"fsm_state: run {run_id} has no FSM; open the instance without a state",
                metadata={"field": "fsm_state"}, violations=[("fsm_state", "the run has no FSM")],
            )
        if not profile:
            raise InvalidArgument(
                "profile is required", metadata={"field": "profile"}, violations=[("profile", "required")]
            )
        return spec.profile(profile, run_id), ""
    state = fsm.state(fsm_state or fsm.initial)
    if state is None:
        listed = ", ".join(s.name for s in fsm.states)
        raise InvalidArgument(
            f"fsm_state: {fsm_state!r} is not a state of run {run_id}'s FSM; its states are {listed}",
            metadata={"field": "fsm_state", "value": fsm_state},
            violations=[("fsm_state", "not a state of the run's FSM")],
        )
    if not profile or profile == state.profile:
        return spec.profile(state.profile, run_id), state.name
    if fsm_state:
        raise InvalidArgument(
            f"profile: state {state.name!r} runs profile {state.profile!r}, not {profile!r}; "
            "name the state's profile or leave profile empty",
            metadata={"field": "profile", "value": profile},
            violations=[("profile", f"state {state.name!r} runs {state.profile!r}")],
        )
    running = next((s.name for s in fsm.states if s.profile == profile), "")
    return spec.profile(profile, run_id), running
