"""archive: threads `archive_thread` adds and `search_archive` finds (through the index: see
`archive_query`, `archive_search`). An append-only log, so a fork copies nothing but a pointer to it.
"""

from __future__ import annotations

from dataclasses import replace

from ggmodules.core.modules.caps import check_caps
from ggmodules.core.modules.contents import ArchiveContents, ArchivedThread, Message
from ggmodules.core.modules.figures import text_bytes
from ggmodules.core.modules.ops import ArchiveThread
from ggmodules.core.modules.store import Applied, StoreHead


def archive_thread(head: StoreHead, op: ArchiveThread) -> Applied:
    thread_id = head.head_seq + 1
    messages = tuple(Message(i, m.role, m.content, 0) for i, m in enumerate(op.messages, start=1))
    thread = ArchivedThread(thread_id, op.title, messages)
    before = head.figures
    after = replace(
        before,
        items=before.items + 1,
        bytes=before.bytes + text_bytes(op.title, *(m.content for m in messages)),
    )
    check_caps(head.kind, head.caps, (before.items, after.items), (before.bytes, after.bytes))
    return Applied(
        replace(head, figures=after, head_seq=thread_id),
        ArchiveContents((thread,)),
        thread=thread,
        thread_id=thread_id,
    )
