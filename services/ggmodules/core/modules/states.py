"""The kind-specific state of a store: its empty form and its JSON text."""

from __future__ import annotations

import json

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.board import BoardState
from ggmodules.core.modules.history import HistoryState
from ggmodules.core.modules.memories import MemoriesState
from ggmodules.core.modules.skills import SkillsState
from ggmodules.core.modules.tasks import TasksState
from ggmodules.core.vocabulary import MemoryStrategy

# The archive keeps everything in its log, so it has no state.
KindState = HistoryState | MemoriesState | TasksState | BoardState | SkillsState | None

_CLASSES: dict[Kind, type[HistoryState | MemoriesState | TasksState | BoardState | SkillsState]] = {
    Kind.HISTORY: HistoryState,
    Kind.MEMORIES: MemoriesState,
    Kind.TASKS: TasksState,
    Kind.BOARD: BoardState,
    Kind.SKILLS: SkillsState,
}


def empty_state(kind: Kind, strategy: MemoryStrategy = MemoryStrategy.SCRATCHPAD) -> KindState:
    match kind:
        case Kind.HISTORY:
            return HistoryState()
        case Kind.MEMORIES:
            return MemoriesState(strategy)
        case Kind.TASKS:
            return TasksState()
        case Kind.BOARD:
            return BoardState()
        case Kind.SKILLS:
            return SkillsState()
    return None


def encode_state(state: object) -> str:
    if state is None:
        return "{}"
    to_json = getattr(state, "to_json")  # noqa: B009 - every state class has one
    return json.dumps(to_json(), separators=(",", ":"), ensure_ascii=False)


def decode_state(kind: Kind, text: str) -> KindState:
    cls = _CLASSES.get(kind)
    return cls.from_json(json.loads(text)) if cls is not None else None
