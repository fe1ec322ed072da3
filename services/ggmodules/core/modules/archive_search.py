"""One search of an archive store: what is asked (a parsed query, a page, a mode) and what answers it (hits
in rank order, each with its score and a snippet; the next page's token; the mode that answered).

Ranking is by relevance, the index's own score (BM25 on SQLite, cover density on PostgreSQL; a match in
the title counts double one in the messages); equal scores go newest thread first. A page token pins the
threads searched to those archived before the first page, so a thread archived while a client pages
neither appears on a later page nor shifts one.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
from dataclasses import dataclass

from ggmodules.core.errors import InvalidArgument, Reason
from ggmodules.core.modules import pages
from ggmodules.core.modules.archive_query import MAX_QUERY_CHARS, ArchiveQuery, parse_query, refused
from ggmodules.core.modules.contents import ArchivedThread

# How a snippet marks the words that matched, and text left out around it.
MARK = "**"
ELLIPSIS = "…"


class SearchMode(enum.Enum):
    TEXT = "text"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"


@dataclass(frozen=True, slots=True)
class ArchiveSearch:
    query: ArchiveQuery
    page_size: int
    # Hits already handed out on earlier pages.
    offset: int = 0
    # Only threads with an id up to this one (0: every thread the store holds now).
    upto: int = 0
    mode: SearchMode = SearchMode.TEXT


@dataclass(frozen=True, slots=True)
class ArchiveHit:
    thread: ArchivedThread
    # Higher is more relevant; comparable within one answer only.
    score: float
    # The best-matching passage, matched words between MARKs.
    snippet: str


@dataclass(frozen=True, slots=True)
class SearchPage:
    hits: tuple[ArchiveHit, ...]
    next_page_token: str
    mode: SearchMode


def plan_search(
    store_id: str, text: str, page_size: int, page_token: str, mode: SearchMode = SearchMode.TEXT
) -> ArchiveSearch:
    """Checks everything a search is asked before it touches a store. A SEMANTIC query is any text (up to
    MAX_QUERY_CHARS); the other modes read it in the query language."""
    query = parse_query(text) if mode != SearchMode.SEMANTIC else _semantic_query(text)
    size = pages.ARCHIVE_SEARCH.size(page_size)  # a negative one refused
    offset, upto = _decode(page_token, _scope(store_id, query.text, mode))
    return ArchiveSearch(query, size, offset, upto, mode)


def page_of(
    search: ArchiveSearch, store_id: str, upto: int, hits: list[ArchiveHit], more: bool
) -> SearchPage:
    """`hits` of this page; `upto`: the newest thread id the search covered (pinned for the next pages)."""
    token = ""
    if more:
        token = _encode(_scope(store_id, search.query.text, search.mode), search.offset + len(hits), upto)
    return SearchPage(tuple(hits), token, search.mode)


def _semantic_query(text: str) -> ArchiveQuery:
    if not text.strip():
        raise refused("query is empty; say what the thread was about", "empty")
    if len(text) > MAX_QUERY_CHARS:
        raise refused(
            f"query is {len(text)} characters; the limit is {MAX_QUERY_CHARS}", "too_long",
            limit=str(MAX_QUERY_CHARS),
        )
    return ArchiveQuery((), (), text)


def _scope(store_id: str, text: str, mode: SearchMode) -> str:
    """A token answers one query of one store in one mode."""
    return hashlib.blake2s(f"{store_id}\n{mode.value}\n{text}".encode(), digest_size=6).hexdigest()


def _encode(scope: str, offset: int, upto: int) -> str:
    return base64.urlsafe_b64encode(f"as1|{scope}|{offset}|{upto}".encode()).decode().rstrip("=")


def _decode(token: str, scope: str) -> tuple[int, int]:
    if not token:
        return 0, 0
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        tag, given, offset, upto = text.split("|")
        if tag == "as1" and given == scope and offset.isdigit() and upto.isdigit():
            return int(offset), int(upto)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidArgument(
        "page_token was not handed out for this query of this store; pass the next_page_token of the "
        "previous page with the same query, or none for the first page",
        reason=Reason.INVALID_PAGE_TOKEN,
        metadata={"field": "page_token"},
    )
