"""The query language of `search_archive`, parsed here so that no user input ever reaches an index as query
syntax: each index renders the parsed form in its own syntax (FTS5 MATCH, PostgreSQL tsquery) from words
made only of letters and digits.

    alembic upgrade        every term must match (AND)
    "upgrade failed"       a phrase: these words next to each other, in this order
    migrat*                a prefix: any word starting with it (at least 2 letters before the *)
    upgrade OR downgrade   either one; OR binds tighter than AND: `db upgrade OR downgrade` is
                           db AND (upgrade OR downgrade)
    -flaky, -"timed out"   excluded: threads containing it are left out
Case does not matter (accents do), and words match in any English form ("migrations" finds "migration").
Punctuation separates words: `foo-bar` or `foo.bar` is the phrase "foo bar". Common English words (the, of,
how, ...) outside quotes are ignored. At most MAX_QUERY_CHARS characters and MAX_TERMS terms.

A query that cannot be searched is refused with INVALID_ARGUMENT, reason INVALID_QUERY, and ErrorInfo
metadata `problem`: empty, too_long, too_many_terms, unclosed_quote, dangling_or, only_exclusions,
only_common_words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ggmodules.core.errors import InvalidArgument, Reason

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32
MIN_PREFIX = 2

_WORD = re.compile(r"[^\W_]+")
# PostgreSQL's (Snowball) English stop words: what its `english` configuration leaves out of an index.
_COMMON = """a about above after again against all am an and any are as at be because been before being
    below between both but by can did do does doing don down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own s same she should so
    some such t than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with you your
    yours yourself yourselves"""
COMMON_WORDS = frozenset(_COMMON.split())


@dataclass(frozen=True, slots=True)
class Term:
    """A word or a phrase (words in order); `prefix`: the last word matches any word it starts."""

    words: tuple[str, ...]
    prefix: bool = False
    # The term as typed (without its -, quotes and *), for an index that tokenizes it itself.
    source: str = ""


@dataclass(frozen=True, slots=True)
class ArchiveQuery:
    """Every group must match (a group: any of its terms); no excluded term may."""

    groups: tuple[tuple[Term, ...], ...]
    excluded: tuple[Term, ...] = ()
    text: str = ""

    @property
    def terms(self) -> tuple[Term, ...]:
        return tuple(t for g in self.groups for t in g)


@dataclass(frozen=True, slots=True)
class _Item:
    term: Term | None  # None: an OR
    negated: bool = False
    # Nothing indexable was left of it (punctuation only, or a common word).
    dropped: bool = False
    common: bool = False


def parse_query(text: str) -> ArchiveQuery:
    text = unicodedata.normalize("NFC", text)
    # Control characters (NUL among them) separate words like spaces do.
    text = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text)
    if len(text) > MAX_QUERY_CHARS:
        raise refused(
            f"query is {len(text)} characters; the limit is {MAX_QUERY_CHARS}", "too_long",
            limit=str(MAX_QUERY_CHARS),
        )
    if not text.strip():
        raise refused("query is empty; give at least one word to look for", "empty")
    groups, excluded, common = _combine(_lex(text))
    if not groups:
        if excluded:
            raise refused(
                "query only excludes (-word); add at least one word the threads must contain",
                "only_exclusions",
            )
        if common:
            raise refused(
                "query has only common words (the, of, how, ...), which are not searched; add a distinctive "
                "word", "only_common_words",
            )
        raise refused("query has no words to look for, only punctuation", "empty")
    count = sum(len(g) for g in groups) + len(excluded)
    if count > MAX_TERMS:
        raise refused(
            f"query has {count} terms; the limit is {MAX_TERMS}", "too_many_terms", limit=str(MAX_TERMS)
        )
    return ArchiveQuery(tuple(tuple(g) for g in groups), tuple(excluded), text)


def _lex(text: str) -> list[_Item]:
    items: list[_Item] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        negated = text[i] == "-" and i + 1 < n and not text[i + 1].isspace()
        start = i + 1 if negated else i
        if start < n and text[start] == '"':
            close = text.find('"', start + 1)
            if close < 0:
                raise refused(
                    "query has an unclosed quote; close the phrase with a second \"", "unclosed_quote"
                )
            prefix = close + 1 < n and text[close + 1] == "*"
            items.append(_term(text[start + 1 : close], negated, prefix, quoted=True))
            i = close + (2 if prefix else 1)
            continue
        end = start
        while end < n and not text[end].isspace() and text[end] != '"':
            end += 1
        token = text[start:end]
        i = end
        if token == "OR" and not negated:
            items.append(_Item(None))
            continue
        stripped = token.rstrip("*")
        items.append(_term(stripped, negated, prefix=stripped != token, quoted=False))
    return items


def _term(source: str, negated: bool, prefix: bool, quoted: bool) -> _Item:
    words = tuple(_WORD.findall(source.casefold()))
    if not words:
        return _Item(Term(()), negated, dropped=True)
    prefix = prefix and len(words[-1]) >= MIN_PREFIX
    if not quoted and not prefix and len(words) == 1 and words[0] in COMMON_WORDS:
        return _Item(Term(words), negated, dropped=True, common=True)
    return _Item(Term(words, prefix, source.strip()), negated)


def _combine(items: list[_Item]) -> tuple[list[list[Term]], list[Term], bool]:
    """Terms into AND-ed groups of OR-ed alternatives, and the excluded terms."""
    groups: list[list[Term]] = []
    excluded: list[Term] = []
    common = any(it.common for it in items)
    join = False  # the previous item was an OR joining the next term to the last group
    for k, it in enumerate(items):
        if it.term is None:
            before = items[k - 1] if k > 0 else None
            after = items[k + 1] if k + 1 < len(items) else None
            if before is None or after is None or before.term is None or after.term is None:
                raise refused("OR needs a term on each side, e.g. `upgrade OR downgrade`", "dangling_or")
            if before.negated or after.negated:
                raise refused(
                    "OR joins terms to look for, not excluded ones (-word); exclude each on its own",
                    "dangling_or",
                )
            # An alternative with nothing searchable (punctuation, a common word) leaves the other alone.
            join = not (before.dropped or after.dropped)
            continue
        if it.dropped:
            join = False
            continue
        if it.negated:
            excluded.append(it.term)
        elif join and groups:
            groups[-1].append(it.term)
        else:
            groups.append([it.term])
        join = False
    return groups, excluded, common


def refused(message: str, problem: str, **extra: str) -> InvalidArgument:
    """The INVALID_QUERY refusal of a query, with its `problem`."""
    return InvalidArgument(
        message + ". See search_archive's description for the query language",
        reason=Reason.INVALID_QUERY,
        metadata={"field": "query", "problem": problem, **extra},
        violations=[("query", message)],
    )
