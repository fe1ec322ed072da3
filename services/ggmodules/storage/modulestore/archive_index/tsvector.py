"""PostgreSQL: the generated column `ms_archive_threads.search_vector` (title weighted A, message contents
B, English configuration) with a GIN index, ranked with ts_rank_cd.

The GIN index covers every store of the database. So that a search reads only its own store's entries, each
vector also holds a lexeme naming its store (`store_lexeme`), and the search asks for it beside its terms:
the index intersects the two, and a small archive is searched as fast beside a large one as alone.

The query is built from the parsed terms with phraseto_tsquery (the term's text as a bound value, which
PostgreSQL tokenizes like the indexed text and never reads as syntax) and to_tsquery only for prefixes,
whose words are letters and digits alone.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import text
from sqlalchemy.engine import Connection

from ggmodules.core.modules.archive_query import ArchiveQuery, Term
from ggmodules.core.modules.archive_search import ELLIPSIS, MARK, ArchiveSearch
from ggmodules.storage.modulestore.archive_index.common import Ranked, Segment

CONFIG = "english"
# ts_rank_cd weights for {D, C, B, A}: a title (A) match counts double a message (B) one.
WEIGHTS = "{0.1, 0.2, 0.5, 1.0}"
# Rank divided by 1 + log(document length).
NORMALIZATION = 1
HEADLINE = f'StartSel="{MARK}", StopSel="{MARK}", MaxWords=24, MinWords=8, MaxFragments=2, ' \
    f'FragmentDelimiter=" {ELLIPSIS} "'
# The text a snippet is cut from: the title, then the message contents.
_DOCUMENT = (
    "t.title || E'\\n' || coalesce((SELECT string_agg(x, E'\\n') FROM jsonb_array_elements_text("
    "jsonb_path_query_array(t.messages::jsonb, '$[*][1]')) AS x), '')"
)


def tsquery(query: ArchiveQuery, params: dict[str, object]) -> str:
    """The query as a tsquery expression; the terms' text goes into `params`."""

    def term(t: Term) -> str:
        name = f"t{len(params)}"
        if t.prefix:
            params[name] = " <-> ".join(t.words) + ":*"
            return f"to_tsquery('{CONFIG}', :{name})"
        params[name] = t.source or " ".join(t.words)
        return f"phraseto_tsquery('{CONFIG}', :{name})"

    def any_of(terms: tuple[Term, ...]) -> str:
        return "(" + " || ".join(term(t) for t in terms) + ")"

    expr = " && ".join(any_of(group) for group in query.groups)
    if query.excluded:
        expr = f"({expr}) && !!{any_of(query.excluded)}"
    return expr


def store_lexeme(run_id: str, store_id: str) -> str:
    """The lexeme the generated column adds for the thread's store (letters and digits only)."""
    return "s" + hashlib.md5(f"{run_id}/{store_id}".encode(), usedforsecurity=False).hexdigest()


def ranked(conn: Connection, run_id: str, segs: list[Segment], search: ArchiveSearch) -> list[Ranked]:
    terms: dict[str, object] = {}
    query = tsquery(search.query, terms)
    stores = sorted({s.store_id for s in segs})
    for i, store_id in enumerate(stores):
        terms[f"store{i}"] = store_lexeme(run_id, store_id)
    in_stores = " || ".join(f"CAST(:store{i} AS tsquery)" for i in range(len(stores)))
    params: dict[str, object] = {
        **terms,
        "run_id": run_id,
        "limit": search.page_size + 1,
        "offset": search.offset,
        "headline": HEADLINE,
    }
    where = []
    for i, s in enumerate(segs):
        params[f"s{i}"], params[f"lo{i}"], params[f"hi{i}"] = s.store_id, s.lo, s.hi
        where.append(f"(t.store_id = :s{i} AND t.seq > :lo{i} AND t.seq <= :hi{i})")
    sql = f"""
        WITH q AS (SELECT {query} AS query),
        hits AS (
            SELECT t.store_id, t.seq,
                   ts_rank_cd('{WEIGHTS}', t.search_vector, {query}, {NORMALIZATION}) AS score
            FROM ms_archive_threads AS t
            WHERE t.run_id = :run_id AND ({" OR ".join(where)})
              AND t.search_vector @@ (({query}) && ({in_stores}))
            ORDER BY score DESC, t.seq DESC
            LIMIT :limit OFFSET :offset
        )
        SELECT t.seq, t.title, t.messages, h.score,
               ts_headline('{CONFIG}', {_DOCUMENT}, q.query, :headline) AS snippet
        FROM hits AS h
        JOIN ms_archive_threads AS t ON t.run_id = :run_id AND t.store_id = h.store_id AND t.seq = h.seq
        CROSS JOIN q
        ORDER BY h.score DESC, h.seq DESC
    """
    # psycopg prepares a statement run five times, and PostgreSQL may then plan it once for any values:
    # blind to how rare the query's words are, that plan reads the whole store (~100x slower at 100,000
    # threads). A search is planned for its own words every time.
    conn.execute(text("SET LOCAL plan_cache_mode = force_custom_plan"))
    return [Ranked(*r) for r in conn.execute(text(sql), params)]
