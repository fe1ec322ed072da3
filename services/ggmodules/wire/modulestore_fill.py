"""Messages on every write's path filled in place (a window's contents, figures) rather than built as
nested messages and copied into their parents: the write's event and its WriteResponse use these."""

from __future__ import annotations

from ggmodules.common.v1 import module_pb2
from ggmodules.core.modules import contents as c
from ggmodules.core.modules.figures import Figures


def fill_history(h: module_pb2.HistoryContents, contents: c.HistoryContents) -> None:
    """A window's contents written into `h` (present even when empty)."""
    h.SetInParent()
    h.system_prompt = contents.system_prompt
    h.system_prompt_set = contents.system_prompt_set
    add = h.messages.add
    for m in contents.messages:
        add(seq=m.seq, role=m.role, content=m.content, turn=m.turn)
    for b in contents.open_views:
        h.open_views.add(id=b.id, content=b.content)
    for b in contents.pinned_blocks:
        h.pinned_blocks.add(id=b.id, content=b.content)
    h.turn = contents.turn
    h.message_count = contents.message_count


def fill_figures(target: module_pb2.ModuleFigures, f: Figures) -> None:
    """`figures_pb(f)` written into `target` (present even when all zero)."""
    target.SetInParent()
    target.items = f.items
    target.bytes = f.bytes
    target.writes = f.writes
