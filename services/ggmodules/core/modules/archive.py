"""archive: threads `archive_thread` adds and `search_archive` finds. An append-only log, so a fork copies
nothing but a pointer to it.
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


def matches(thread: ArchivedThread, query: str) -> bool:
    """Every word of the query appears, ignoring case, in the title or a message."""
    text = "\n".join((thread.title, *(m.content for m in thread.messages))).casefold()
    return all(term in text for term in query.casefold().split())


def search(threads: list[ArchivedThread], query: str, limit: int) -> list[ArchivedThread]:
    """Matching threads, newest first."""
    found = [t for t in sorted(threads, key=lambda t: t.id, reverse=True) if matches(t, query)]
    return found[:limit] if limit > 0 else found
