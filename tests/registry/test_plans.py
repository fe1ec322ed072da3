"""The binding plans Registry hands ModuleStore (pure domain): open, spawn and fork, kind by kind."""

from __future__ import annotations

from ggmodules.core.kinds import Kind
from ggmodules.core.registry.plans import plan_fork, plan_open, plan_spawn
from ggmodules.core.registry.profiles import ModuleInput, Profile, ProfileInput, validate_profile
from ggmodules.core.roster import Binding, RosterRow
from ggmodules.core.vocabulary import BindAction, MemoryScope, MemoryStrategy, Origin

D, C, S, F, N = BindAction.DISABLED, BindAction.CREATE, BindAction.SHARE, BindAction.FORK, BindAction.NAMED


def _profile(name: str, scope: MemoryScope, *, skills: str = "") -> Profile:
    on = ModuleInput(enabled=True)
    return validate_profile(
        ProfileInput(
            name,
            {
                "memories": ModuleInput(enabled=True, scope=scope),
                "tasks": on,
                "skills": ModuleInput(enabled=True, skills_directory=skills),
                "archive": on,
            },
        )
    )


def _shape(bindings: tuple[Binding, ...]) -> dict[str, tuple[BindAction, Origin, str, str]]:
    return {Kind(b.kind).word: (b.action, b.origin, b.source_store_id, b.named_key) for b in bindings}


def _roster(n: int, strategy: MemoryStrategy = MemoryStrategy.SCRATCHPAD) -> list[RosterRow]:
    memories = RosterRow(Kind.MEMORIES, f"memories-{n}", True, strategy=strategy)
    return [memories if kind is Kind.MEMORIES else RosterRow(kind, f"{kind.word}-{n}", True) for kind in Kind]


def test_open_creates_the_window_and_joins_the_runs_board_and_the_profiles_catalogue() -> None:
    plan = plan_open(_profile("coder", MemoryScope.AGENT, skills="shared"), board_enabled=True)
    assert _shape(plan.bindings) == {
        "history": (C, Origin.CREATED, "", ""),
        "memories": (N, Origin.PROFILE, "", "profile/coder/memories"),
        "tasks": (C, Origin.CREATED, "", ""),
        "board": (N, Origin.RUN, "", "run/board"),
        "skills": (N, Origin.PROFILE, "", "skills/shared"),
        "archive": (C, Origin.CREATED, "", ""),
    }
    no_board = plan_open(_profile("coder", MemoryScope.INSTANCE), board_enabled=False)
    assert _shape(no_board.bindings)["board"][0] is D
    assert _shape(no_board.bindings)["memories"][:2] == (C, Origin.CREATED)


def test_spawn_shares_the_parents_memories_only_when_inherited_under_the_same_strategy() -> None:
    heir = _profile("helper", MemoryScope.INHERITED)
    plan = plan_spawn(heir, True, "lead-0", _roster(0))
    assert _shape(plan.bindings)["memories"] == (S, Origin.INHERITED, "memories-0", "")
    assert (plan.cause.value, plan.parent_agent_id) == ("spawn", "lead-0")
    other = plan_spawn(heir, True, "lead-0", _roster(0, MemoryStrategy.MARKDOWN_INDEX))
    assert _shape(other.bindings)["memories"][:2] == (C, Origin.CREATED)


def test_r17_fork_plans_independent_copies_a_shared_board_and_memories_by_scope() -> None:
    for scope, memories in (
        (MemoryScope.INSTANCE, (F, Origin.FORKED, "memories-3", "")),
        (MemoryScope.AGENT, (S, Origin.PROFILE, "memories-3", "")),
        (MemoryScope.INHERITED, (S, Origin.INHERITED, "memories-3", "")),
    ):
        plan = plan_fork(_profile("coder", scope), True, "coder-3", _roster(3))
        shape = _shape(plan.bindings)
        assert shape["memories"] == memories
        assert shape["history"] == (F, Origin.FORKED, "history-3", "")
        assert shape["tasks"] == (F, Origin.FORKED, "tasks-3", "")
        assert shape["archive"] == (F, Origin.FORKED, "archive-3", "")
        assert shape["board"] == (N, Origin.RUN, "", "run/board")
        assert shape["skills"] == (F, Origin.PROFILE, "skills-3", "skills/coder")
        skills = next(b for b in plan.bindings if b.kind is Kind.SKILLS)
        assert skills.read_set_source_agent_id == "coder-3"
