"""The pure per-kind plan (R19-R24, R26, R35): table-driven, no services."""

from __future__ import annotations

import pytest

from ggmodules.core.kinds import Kind
from ggmodules.core.registry.profiles import ModuleSpec, Profile
from ggmodules.core.roster import Caps, RosterRow
from ggmodules.core.transfer.plan import (
    Edge,
    PredecessorLacks,
    Sides,
    TransferPlan,
    plan_exec,
    plan_transition,
)
from ggmodules.core.vocabulary import BindAction, MemoryScope, MemoryStrategy, Origin, Outcome

H, M, T, B, S, A = Kind.HISTORY, Kind.MEMORIES, Kind.TASKS, Kind.BOARD, Kind.SKILLS, Kind.ARCHIVE
C, D, R, F = Outcome.CARRIED, Outcome.DROPPED, Outcome.REINITIALIZED, Outcome.FRESH
PAD, INDEX = MemoryStrategy.SCRATCHPAD, MemoryStrategy.MARKDOWN_INDEX


def spec(kind: Kind, **kw: object) -> ModuleSpec:
    if kind is M:
        kw.setdefault("strategy", PAD)
        kw.setdefault("scope", MemoryScope.INSTANCE)
    return ModuleSpec(kind, **kw)  # type: ignore[arg-type]


def profile(name: str, *kinds: Kind, **specs: ModuleSpec) -> Profile:
    modules = {k: spec(k) for k in (H, *kinds)}
    modules.update({Kind[w.upper()]: s for w, s in specs.items()})
    if S in modules and not modules[S].skills_directory:
        modules[S] = ModuleSpec(S, modules[S].read_only, modules[S].caps, skills_directory=name)
    return Profile(name, {k: modules[k] for k in Kind if k in modules})


def roster(
    *kinds: Kind, origin: Origin = Origin.CREATED, strategy: MemoryStrategy = PAD
) -> tuple[RosterRow, ...]:
    return tuple(
        RosterRow(
            k,
            f"{k.word}-0" if k in kinds else "",
            k in kinds,
            Origin.RUN if k is B else origin,
            strategy=strategy if k is M and k in kinds else MemoryStrategy.UNSPECIFIED,
        )
        for k in Kind
    )


def sides(before: Profile, after: Profile, held: tuple[RosterRow, ...], board: bool = False) -> Sides:
    return Sides("planner-0", before, held, after, board)


def outcomes(plan: TransferPlan) -> dict[Kind, Outcome]:
    return {k.kind: k.outcome for k in plan.kinds}


EVERY = (H, M, T, S, A)
PLANNER = profile("planner", *EVERY[1:])

# (name, successor profile, kinds the predecessor holds, board, expected outcome per kind)
EXEC_CASES = [
    (
        "every kind both have is carried",
        profile("coder", *EVERY[1:]),
        EVERY,
        True,
        {H: C, M: C, T: C, B: C, S: C, A: C},
    ),
    (
        "what the successor turns off is dropped",
        profile("coder"),
        EVERY,
        False,
        {H: C, M: D, T: D, S: D, A: D},
    ),
    (
        "what only the successor has starts fresh",
        profile("coder", *EVERY[1:]),
        (H,),
        False,
        {H: C, M: F, T: F, S: F, A: F},
    ),
    (
        "a memory strategy mismatch re-initializes",
        profile("coder", M, memories=spec(M, strategy=INDEX)),
        (H, M),
        False,
        {H: C, M: R},
    ),
    ("the board is the run's: carried even to a bare profile", profile("coder"), (H, B), True, {H: C, B: C}),
]


@pytest.mark.parametrize(
    ("name", "after", "held", "board", "expected"), EXEC_CASES, ids=[c[0] for c in EXEC_CASES]
)
def test_r20_exec_outcome_per_kind(
    name: str, after: Profile, held: tuple[Kind, ...], board: bool, expected: dict[Kind, Outcome]
) -> None:
    plan = plan_exec(sides(PLANNER, after, roster(*held, *((B,) if board else ())), board))
    assert outcomes(plan) == expected


# (name, edge carry, successor profile, held, board, expected)
TRANSITION_CASES = [
    (
        "carries exactly the edge's kinds",
        (H, T),
        profile("coder", T),
        EVERY,
        False,
        {H: C, T: C, M: D, S: D, A: D},
    ),
    (
        "a kind not carried that the successor enables starts fresh",
        (T,),
        profile("coder", *EVERY[1:]),
        EVERY,
        False,
        {H: F, M: F, T: C, S: F, A: F},
    ),
    ("the board is carried though no edge names it", (H,), profile("coder"), (H,), True, {H: C, B: C}),
    (
        "a carried memory under another strategy is re-initialized",
        (H, M),
        profile("coder", M, memories=spec(M, strategy=INDEX)),
        (H, M),
        False,
        {H: C, M: R},
    ),
    ("carrying nothing: the window starts fresh", (), profile("coder", A), (H, A), False, {H: F, A: F}),
]


@pytest.mark.parametrize(
    ("name", "carry", "after", "held", "board", "expected"),
    TRANSITION_CASES,
    ids=[c[0] for c in TRANSITION_CASES],
)
def test_r19_transition_outcome_per_kind(
    name: str,
    carry: tuple[Kind, ...],
    after: Profile,
    held: tuple[Kind, ...],
    board: bool,
    expected: dict[Kind, Outcome],
) -> None:
    edge = Edge("plan", "code", carry)
    plan = plan_transition(sides(PLANNER, after, roster(*held, *((B,) if board else ())), board), edge)
    assert outcomes(plan) == expected


def test_r21_carried_store_is_re_resolved_against_the_receiving_profile() -> None:
    after = profile("coder", T, tasks=ModuleSpec(T, read_only=True, caps=Caps(3, 100)))
    plan = plan_exec(sides(PLANNER, after, roster(H, T)))
    tasks = plan.outcome(T)
    assert tasks is not None and tasks.handing is not None
    assert (tasks.handing.action, tasks.handing.source_store_id) == (None, "tasks-0")
    assert (tasks.handing.origin, tasks.handing.may_write, tasks.handing.caps) == (
        Origin.TRANSFERRED,
        False,
        Caps(3, 100),
    )


def test_r21_reinitialized_memories_note_says_why_in_a_sentence() -> None:
    after = profile("coder", M, memories=spec(M, strategy=INDEX, scope=MemoryScope.AGENT))
    plan = plan_exec(sides(PLANNER, after, roster(H, M)))
    memories = plan.outcome(M)
    assert memories is not None and memories.handing is not None
    assert memories.handing.action is BindAction.NAMED
    assert memories.handing.named_key == "profile/coder/memories"
    # Why, in a sentence: the kind, the outcome, both strategies, both sides.
    note = memories.note
    assert note.startswith("memories were re-initialized")
    assert all(w in note for w in ("planner-0", "profile coder", "a scratchpad", "a markdown index"))
    assert note.index("a scratchpad") < note.index("a markdown index")


def test_opening_note_reads_as_sentences() -> None:
    """The one golden test of the opening note's wording; the others check what it names."""
    after = profile("coder", M, T, A, memories=spec(M, strategy=INDEX))
    plan = plan_exec(sides(profile("planner", M, T, S), after, roster(H, M, T, B, S), board=True))
    assert plan.opening_note == (
        "history, tasks and board arrived from planner-0; memories were re-initialized: planner-0 kept a "
        "scratchpad and profile coder keeps a markdown index, and a scratchpad cannot be read as a markdown "
        "index; skills were dropped: profile coder does not enable them; archive is new."
    )


def test_transition_note_names_what_the_edge_leaves_behind() -> None:
    plan = plan_transition(sides(PLANNER, profile("coder", A), roster(H, T, A)), Edge("plan", "code", (H,)))
    # What arrived and from whom, then one sentence per kind left behind, naming the edge's target.
    arrived, *rest = plan.opening_note.rstrip(".").split("; ")
    assert arrived == "history arrived from planner-0"
    assert [(s.split()[0], "dropped" in s, "fresh" in s, "transition to code" in s) for s in rest] == [
        ("tasks", True, False, True),
        ("archive", False, True, True),
    ]


def test_transition_note_agrees_a_plural_kind_that_starts_fresh() -> None:
    """tasks, skills and memories are plural words: "tasks start fresh", as "tasks were dropped"."""
    coder = profile("coder", T, A)
    plan = plan_transition(sides(PLANNER, coder, roster(H, T, A)), Edge("plan", "code", (H,)))
    fresh = {k.kind: k.note for k in plan.kinds if k.outcome is F}
    assert fresh[T].startswith("tasks start fresh: the transition to code does not carry them")
    assert fresh[A].startswith("archive starts fresh: the transition to code does not carry it")


@pytest.mark.parametrize("origin", [Origin.PROFILE, Origin.INHERITED])
def test_r35_shared_memories_re_point_to_the_successor_profiles_own_store(origin: Origin) -> None:
    after = profile("coder", M, memories=spec(M, scope=MemoryScope.AGENT))
    plan = plan_exec(sides(PLANNER, after, roster(H, M, origin=origin)))
    memories = plan.outcome(M)
    assert memories is not None and memories.handing is not None
    assert (
        memories.outcome,
        memories.handing.action,
        memories.handing.named_key,
        memories.handing.origin,
    ) == (C, BindAction.NAMED, "profile/coder/memories", Origin.PROFILE)


@pytest.mark.parametrize(
    ("origin", "scope"),
    [
        (Origin.CREATED, MemoryScope.AGENT),
        (Origin.PROFILE, MemoryScope.INSTANCE),
        (Origin.FORKED, MemoryScope.AGENT),
    ],
)
def test_r35_other_memories_keep_their_store(origin: Origin, scope: MemoryScope) -> None:
    after = profile("coder", M, memories=spec(M, scope=scope))
    memories = plan_exec(sides(PLANNER, after, roster(H, M, origin=origin))).outcome(M)
    assert memories is not None and memories.handing is not None
    assert (memories.outcome, memories.handing.action, memories.handing.source_store_id) == (
        C,
        None,
        "memories-0",
    )


def test_skills_follow_the_successors_directory_and_the_window() -> None:
    same = profile("coder", S, skills=ModuleSpec(S, skills_directory="planner"))
    other = profile("coder", S)
    kept = plan_exec(sides(PLANNER, same, roster(H, S))).outcome(S)
    moved = plan_exec(sides(PLANNER, other, roster(H, S))).outcome(S)
    windowless = plan_transition(sides(PLANNER, same, roster(H, S)), Edge("plan", "code", (S,))).outcome(S)
    assert kept is not None and kept.handing is not None
    assert (kept.outcome, kept.handing.action, kept.handing.read_set_source_agent_id) == (
        C,
        None,
        "planner-0",
    )
    assert moved is not None and moved.handing is not None
    assert (moved.outcome, moved.handing.action, moved.handing.named_key) == (
        C,
        BindAction.NAMED,
        "skills/coder",
    )
    assert windowless is not None and windowless.handing is not None
    assert windowless.handing.read_set_source_agent_id == ""


def test_board_joins_as_the_runs_store() -> None:
    board = plan_exec(sides(PLANNER, profile("coder"), roster(H, B), board=True)).outcome(B)
    assert board is not None and board.handing is not None
    assert (board.handing.origin, board.handing.may_write, board.store_id_before) == (
        Origin.RUN,
        True,
        "board-0",
    )


def test_r26_carrying_a_kind_the_predecessor_does_not_hold_is_a_defect() -> None:
    edge = Edge("plan", "code", (H, M))
    with pytest.raises(PredecessorLacks) as lack:
        plan_transition(sides(profile("reviewer"), profile("coder", M), roster(H)), edge)
    assert lack.value.kinds == (M,)
    assert "memories" in str(lack.value)


def test_r26_a_board_run_whose_predecessor_lacks_the_board_is_a_defect() -> None:
    with pytest.raises(PredecessorLacks):
        plan_exec(sides(PLANNER, profile("coder"), roster(H), board=True))


def test_kinds_neither_side_holds_are_not_listed() -> None:
    plan = plan_exec(sides(profile("planner"), profile("coder"), roster(H)))
    assert [k.kind for k in plan.kinds] == [H]
