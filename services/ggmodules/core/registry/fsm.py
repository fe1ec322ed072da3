"""FSM definitions, validated at launch (R25): every problem is reported at once.

States name the run's profiles, edges name states, and an edge carries kinds by their words. A carried
kind must be held by the outgoing state's profile (there is something to carry) and enabled by the target
state's profile (the successor can receive it); the board is held by every agent of a run that has one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ggmodules.core.errors import InvalidArgument, Reason
from ggmodules.core.kinds import KIND_WORDS, Kind
from ggmodules.core.registry.profiles import Profile


@dataclass(frozen=True)
class FsmStateInput:
    name: str
    profile: str


@dataclass(frozen=True)
class FsmEdgeInput:
    source: str
    target: str
    carry: tuple[str, ...] = ()


@dataclass(frozen=True)
class FsmInput:
    initial: str = ""
    states: tuple[FsmStateInput, ...] = ()
    edges: tuple[FsmEdgeInput, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.initial or self.states or self.edges)


@dataclass(frozen=True)
class FsmState:
    name: str
    profile: str


@dataclass(frozen=True)
class FsmEdge:
    source: str
    target: str
    carry: tuple[Kind, ...]


@dataclass(frozen=True)
class Fsm:
    initial: str
    states: tuple[FsmState, ...]
    edges: tuple[FsmEdge, ...]

    def state(self, name: str) -> FsmState | None:
        return next((s for s in self.states if s.name == name), None)


def validate_fsm(given: FsmInput, profiles: Sequence[Profile], board_enabled: bool) -> Fsm:
    """The FSM, or one INVALID_FSM refusal listing every problem as a field violation."""
    problems: list[tuple[str, str]] = []
    by_name = {p.name: p for p in profiles}
    state_profiles: dict[str, Profile | None] = {}

    if not given.states:
        problems.append(("fsm.states", "an FSM needs at least one state"))
    for i, state in enumerate(given.states):
        at = f"fsm.states[{i}]"
        if not state.name:
            problems.append((f"{at}.name", "required"))
        elif state.name in state_profiles:
            problems.append((f"{at}.name", f"state {state.name!r} is named twice"))
        profile = by_name.get(state.profile)
        if not state.profile:
            problems.append((f"{at}.profile", "required: the profile this state runs"))
        elif profile is None:
            problems.append(
                (f"{at}.profile", f"{state.profile!r} is not a profile of this run; its profiles are "
                 f"{_listing(by_name)}")
            )
        if state.name and state.name not in state_profiles:
            state_profiles[state.name] = profile

    if not given.initial:
        problems.append(("fsm.initial", "required: the state a root instance opens in"))
    elif given.initial not in state_profiles:
        problems.append(("fsm.initial", _not_a_state(given.initial, state_profiles)))

    edges: list[FsmEdge] = []
    seen_edges: set[tuple[str, str]] = set()
    for i, edge in enumerate(given.edges):
        at = f"fsm.edges[{i}]"
        for end, name in (("from", edge.source), ("to", edge.target)):
            if not name:
                problems.append((f"{at}.{end}", "required"))
            elif name not in state_profiles:
                problems.append((f"{at}.{end}", _not_a_state(name, state_profiles)))
        if (edge.source, edge.target) in seen_edges:
            problems.append((at, f"a second edge from {edge.source!r} to {edge.target!r}; one edge per pair"))
        seen_edges.add((edge.source, edge.target))
        outgoing = state_profiles.get(edge.source)
        incoming = state_profiles.get(edge.target)
        carried: list[Kind] = []
        for j, word in enumerate(edge.carry):
            where = f"{at}.carry[{j}]"
            kind = next((k for k in Kind if k.word == word), None)
            if kind is None:
                problems.append((where, f"{word!r} is not a kind; the six kinds are {', '.join(KIND_WORDS)}"))
                continue
            if kind in carried:
                problems.append((where, f"{word!r} is carried twice"))
                continue
            carried.append(kind)
            if kind is Kind.BOARD:
                # The run's switch decides for both ends: one problem, not one per end.
                if not board_enabled and (outgoing is not None or incoming is not None):
                    problems.append((where, _NO_BOARD))
                continue
            if outgoing is not None and not outgoing.holds(kind):
                problems.append((where, _not_held(word, edge.source, outgoing)))
            if incoming is not None and not incoming.holds(kind):
                problems.append((where, _not_received(word, edge.target, incoming)))
        edges.append(FsmEdge(edge.source, edge.target, tuple(carried)))

    if problems:
        listed = "; ".join(f"{f}: {d}" for f, d in problems)
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise InvalidArgument(
            f"the FSM cannot launch ({count}): {listed}",
            reason=Reason.INVALID_FSM,
            metadata={"problems": str(len(problems))},
            violations=problems,
        )
    states = tuple(FsmState(s.name, s.profile) for s in given.states)
    return Fsm(given.initial, states, tuple(edges))


_NO_BOARD = "'board' is not held by any state: the run has no board (turn on board_enabled)"


def _not_held(word: str, state: str, profile: Profile) -> str:
    return (
        f"{word!r} is not held by state {state!r}: its profile {profile.name!r} does not enable {word}, "
        "so there is nothing to carry"
    )


def _not_received(word: str, state: str, profile: Profile) -> str:
    return (
        f"{word!r} cannot be received by state {state!r}: its profile {profile.name!r} does not enable "
        f"{word}; carry only kinds both ends enable, or enable {word} in {profile.name!r}"
    )


def _not_a_state(name: str, states: Iterable[str]) -> str:
    return f"{name!r} is not a state; states are {_listing(states)}"


def _listing(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names) or "(none)"
