"""What a module re-states about itself when it arrives at a successor (R31).

A transfer moves ownership, not contents: a window re-states its slot, views, pins, turn and message count
but not its thread, and an archive only its figures, so a handover costs the same whatever their size.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from ggmodules.core.kinds import Kind
from ggmodules.core.modules import skills
from ggmodules.core.modules.contents import Contents
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.history import HistoryState
from ggmodules.core.modules.states import decode_state
from ggmodules.storage.modulestore.lookup import head_of
from ggmodules.storage.modulestore.reading import contents_of


def restated(conn: Connection, row: Any, read_set: tuple[str, ...]) -> tuple[Figures, Contents | None]:
    head = head_of(row)
    if head.kind == Kind.ARCHIVE:
        return head.figures, None
    if head.kind == Kind.HISTORY:
        state = decode_state(Kind.HISTORY, row.state)
        assert isinstance(state, HistoryState)
        return head.figures, state.contents((), head)
    if head.kind == Kind.SKILLS:
        return skills.holder_figures(head.figures, read_set), contents_of(conn, row, read_set)
    return head.figures, contents_of(conn, row, read_set)
