"""One write: check it fits the store's kind, apply it to the kind, count it."""

from __future__ import annotations

from ggmodules.core.errors import FailedPrecondition, Reason
from ggmodules.core.modules import archive, board, history, memories, skills, tasks
from ggmodules.core.modules.caps import DEFAULT_LIMITS, StoreLimits, check_store_size
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.ops import OP_KIND, OP_NAME, AppendMessages, ArchiveThread, Op
from ggmodules.core.modules.states import KindState
from ggmodules.core.modules.store import Applied, StoreHead
from ggmodules.core.modules.validation import check_op


def apply_write(
    head: StoreHead,
    op: Op,
    state: KindState,
    writer: str,
    read_set: tuple[str, ...] = (),
    limits: StoreLimits = DEFAULT_LIMITS,
) -> Applied:
    """Applies `op` by `writer`. `state` may be None for log operations (they never read it). The store
    may not grow past `limits` (the service's own ceiling, beside the profile's caps)."""
    check_op(op)
    kind = OP_KIND[type(op)]
    if kind != head.kind:
        raise FailedPrecondition(
            f"{OP_NAME[type(op)]} writes a {kind.word} store; {head.kind.word} stores do not take it",
            reason=Reason.WRONG_KIND,
            metadata={"op": OP_NAME[type(op)], "store_kind": head.kind.word},
        )
    applied = _apply(head, op, state, writer, read_set)
    h, f = applied.head, applied.head.figures
    check_store_size(head.kind, limits.for_kind(head.kind), head.figures, f)
    applied.head = StoreHead(
        h.kind,
        h.caps,
        Figures(f.items, f.bytes, head.figures.writes + 1),
        h.head_seq,
        h.turn,
        h.strategy,
        h.directory,
    )
    return applied


def _apply(head: StoreHead, op: Op, state: KindState, writer: str, read_set: tuple[str, ...]) -> Applied:
    if isinstance(op, AppendMessages):
        return history.append_messages(head, op)
    if isinstance(op, ArchiveThread):
        return archive.archive_thread(head, op)
    if isinstance(state, history.HistoryState) and isinstance(op, history.HistoryOp):
        return history.apply_state(head, state, op)
    if isinstance(state, memories.MemoriesState) and isinstance(op, memories.MemoriesOp):
        return memories.apply(head, state, op, writer)
    if isinstance(state, tasks.TasksState) and isinstance(op, tasks.TasksOp):
        return tasks.apply(head, state, op)
    if isinstance(state, board.BoardState) and isinstance(op, board.BoardOp):
        return board.apply(head, state, op)
    if isinstance(state, skills.SkillsState) and isinstance(op, skills.SkillsOp):
        return skills.apply(head, state, read_set, op)
    raise TypeError(f"no state for {OP_NAME[type(op)]} on a {head.kind.word} store")
