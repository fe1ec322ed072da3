"""search_archive through the archive's full-text index (R8: the archive reaches the model through its tools;
SPEC §1: `search_archive` finds by text): ranked by relevance with a snippet and a score, paged, a fork
searching exactly the threads it holds (R11), the index written in the archiving transaction, and queries
that cannot be searched refused INVALID_ARGUMENT, never INTERNAL."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import grpc
import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.storage.migrations import HERE, version_table
from tests.harness import (
    BACKENDS,
    ServiceProcess,
    Suite,
    assert_refused,
    drop_database,
    new_database_url,
    open_channel,
    refused,
    status_of,
    stubs,
)
from tests.harness.modulestore import (
    Agent,
    Stub,
    archive,
    fork_agent,
    new_run,
    open_agent,
    search,
    titles,
)

# Threads about nothing the tests search for, so that no searched word is common in the index (BM25 gives a
# word found in most documents almost no weight).
FILLER = [
    ("css grid", "the sidebar collapses on narrow screens"),
    ("coffee order", "two flat whites and a croissant"),
    ("holiday plan", "train tickets for the coast in august"),
    ("printer", "the office printer jams on duplex pages"),
    ("budget", "quarterly numbers went to finance"),
    ("onboarding", "welcome pack and laptop for the new hire"),
]


def with_filler(stub: Stub) -> Agent:
    agent = open_agent(stub, new_run(), "coder-0")
    for title, content in FILLER:
        archive(stub, agent, title, content)
    return agent


def test_a_thread_matching_more_terms_ranks_first(modulestore: Stub) -> None:
    a = with_filler(modulestore)
    archive(modulestore, a, "lexer", "a tokenizer that feeds the parser and keeps line numbers")
    archive(modulestore, a, "parser notes", "descent parser with backtracking and error recovery")
    archive(modulestore, a, "retry policy", "backtracking retries then recovery after an outage")
    found = search(modulestore, a, "parser OR backtracking OR recovery")
    assert titles(found) == ["parser notes", "retry policy", "lexer"]  # three terms, two, one
    scores = [h.score for h in found.hits]
    assert scores[0] > scores[1] > scores[2] > 0
    assert [h.thread_id for h in found.hits] == [t.id for t in found.threads]
    assert found.mode == ms.SEARCH_MODE_TEXT
    # Every word must match unless OR says otherwise; any English form of a word matches.
    assert titles(search(modulestore, a, "parser recovery")) == ["parser notes"]
    assert titles(search(modulestore, a, "parsers tokenizers")) == ["lexer"]


def test_a_title_match_outranks_a_message_match_and_ties_go_to_the_newer_thread(modulestore: Stub) -> None:
    a = with_filler(modulestore)
    archive(modulestore, a, "notes", "rollout of the canary release")
    archive(modulestore, a, "canary", "notes on the rollout of the release")
    assert titles(search(modulestore, a, "canary")) == ["canary", "notes"]
    older = archive(modulestore, a, "flaky job", "the nightly job timed out")
    newer = archive(modulestore, a, "flaky job", "the nightly job timed out")
    found = search(modulestore, a, "nightly")
    assert [t.id for t in found.threads] == [newer, older]
    assert found.hits[0].score == found.hits[1].score


def test_the_query_language_words_phrases_prefixes_or_and_exclusions(modulestore: Stub) -> None:
    a = with_filler(modulestore)
    archive(modulestore, a, "db upgrade", "schema moved forward")
    archive(modulestore, a, "db downgrade", "schema moved back")
    archive(modulestore, a, "lone upgrade", "the upgrade failed then retried")
    archive(modulestore, a, "migrations", "we migrate the data before the migration window")

    def found(query: str) -> list[str]:
        return sorted(titles(search(modulestore, a, query)))

    assert found("db upgrade OR downgrade") == ["db downgrade", "db upgrade"]  # db AND (upgrade OR downgrade)
    assert found("upgrade OR downgrade") == ["db downgrade", "db upgrade", "lone upgrade"]
    assert found("upgrade -db") == ["lone upgrade"]
    assert found('"upgrade failed"') == ["lone upgrade"]
    assert found('"failed upgrade"') == []
    assert found("migrat*") == ["migrations"]
    assert found("how did we MIGRATE the data?") == ["migrations"]  # common words ignored, any form matches
    assert found("schema -\"moved back\"") == ["db upgrade"]


def test_snippets_mark_the_matched_words_in_the_passage_that_matched(modulestore: Stub) -> None:
    a = with_filler(modulestore)
    before = " ".join(f"alpha{i}" for i in range(60))
    after = " ".join(f"omega{i}" for i in range(60))
    archive(modulestore, a, "long thread", f"{before} the schema migration failed on deploy {after}")
    found = search(modulestore, a, "migrations")
    (hit,) = found.hits
    assert "**migration**" in hit.snippet
    assert "failed" in hit.snippet
    assert len(hit.snippet) < len(found.threads[0].messages[0].content) / 3
    # A phrase marks its words; a match in the title is shown from the title.
    archive(modulestore, a, "deploy checklist", "notes")
    phrase = search(modulestore, a, '"migration failed"').hits[0].snippet
    assert "**migration failed**" in phrase.replace("** **", " ")
    assert search(modulestore, a, "checklist").hits[0].snippet.startswith("deploy **checklist**")


def test_search_pages_through_every_match_once(modulestore: Stub) -> None:
    a = with_filler(modulestore)
    ids = [archive(modulestore, a, f"incident {i}", "pager " * (1 + i % 3) + "woke us") for i in range(25)]
    first = search(modulestore, a, "pager", page_size=10)
    assert len(first.threads) == 10 and first.next_page_token
    # A thread archived while paging is not on later pages, so none is shown twice or skipped.
    archive(modulestore, a, "incident late", "pager again")
    second = search(modulestore, a, "pager", page_size=10, page_token=first.next_page_token)
    third = search(modulestore, a, "pager", page_size=10, page_token=second.next_page_token)
    assert (len(second.threads), len(third.threads), third.next_page_token) == (10, 5, "")
    pages = [*first.hits, *second.hits, *third.hits]
    assert sorted(h.thread_id for h in pages) == ids
    ranked = sorted(pages, key=lambda h: (-h.score, -h.thread_id))
    assert [h.thread_id for h in pages] == [h.thread_id for h in ranked]
    # The default page is 20 threads; a new first page sees the new thread.
    default = search(modulestore, a, "pager")
    assert len(default.threads) == 20 and default.next_page_token
    assert "incident late" in titles(search(modulestore, a, "pager", page_size=100))

    assert_refused(
        lambda: search(modulestore, a, "woke", page_token=first.next_page_token),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN",
    )
    code, reason, *_ = refused(lambda: search(modulestore, a, "pager", page_token="not-a-token"))
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")
    code, _, _, message = refused(lambda: search(modulestore, a, "pager", page_size=-1))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "page_size" in message


def test_semantic_asked_of_a_modulestore_without_it_is_answered_by_text(modulestore: Stub) -> None:
    a = with_filler(modulestore)
    archive(modulestore, a, "deploy", "the canary rollout")
    for mode in (ms.SEARCH_MODE_SEMANTIC, ms.SEARCH_MODE_HYBRID):
        found = search(modulestore, a, "canary", mode=mode)
        assert (titles(found), found.mode) == (["deploy"], ms.SEARCH_MODE_TEXT)
    assert_refused(
        lambda: search(modulestore, a, "canary", mode=7),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD",
    )


def index_entries(suite: Suite) -> int:
    """The archive index's entries in ModuleStore's database (every run of the session)."""
    engine = create_engine(suite.urls["modulestore"])
    table = "ms_archive_fts"
    if suite.backend == "postgres":
        table = "ms_archive_threads WHERE search_vector IS NOT NULL"
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
    finally:
        engine.dispose()


def test_r11_a_fork_searches_exactly_the_threads_it_holds(modulestore: Stub, suite: Suite) -> None:
    a = with_filler(modulestore)
    archive(modulestore, a, "shared one", "deploy notes")
    archive(modulestore, a, "shared two", "deploy notes")
    entries = index_entries(suite)
    fork = fork_agent(modulestore, a, "coder-1")  # the copy runs its source's profile (R17)
    assert index_entries(suite) == entries  # a fork copies none of the index
    archive(modulestore, a, "parent after fork", "deploy notes")
    archive(modulestore, fork, "fork's own", "deploy notes")
    assert sorted(titles(search(modulestore, a, "deploy"))) == [
        "parent after fork", "shared one", "shared two"]
    assert sorted(titles(search(modulestore, fork, "deploy"))) == ["fork's own", "shared one", "shared two"]
    grandchild = fork_agent(modulestore, fork, "coder-2")
    archive(modulestore, fork, "fork after its fork", "deploy notes")
    archive(modulestore, grandchild, "grandchild's own", "deploy notes")
    assert sorted(titles(search(modulestore, grandchild, "deploy"))) == [
        "fork's own", "grandchild's own", "shared one", "shared two"]
    assert sorted(titles(search(modulestore, fork, "deploy"))) == [
        "fork after its fork", "fork's own", "shared one", "shared two"]
    # Paging a fork crosses from its own threads to its parent's.
    pages = search(modulestore, grandchild, "deploy", page_size=3)
    rest = search(modulestore, grandchild, "deploy", page_size=3, page_token=pages.next_page_token)
    assert sorted([*titles(pages), *titles(rest)]) == [
        "fork's own", "grandchild's own", "shared one", "shared two"]


def test_an_archived_thread_is_found_at_once_and_a_refused_one_never(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0", caps=c.Caps(max_items=1))
    word = f"zq{uuid.uuid4().hex[:8]}"
    thread_id = archive(modulestore, a, "first", f"the {word} bug")
    assert [t.id for t in search(modulestore, a, word).threads] == [thread_id]
    # The index is written in the archiving transaction: a refused archive leaves nothing in it.
    other = f"zq{uuid.uuid4().hex[:8]}"
    assert_refused(
        lambda: archive(modulestore, a, "second", f"the {other} bug"),
        grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED",
    )
    assert search(modulestore, a, other).threads == []


def call(stub: Stub, agent: Agent, tool: str, **args: object) -> dict[str, object]:
    response = stub.CallTool(
        svc.CallToolRequest(
            run_id=agent.run_id, agent_id=agent.agent_id, tool_name=tool, arguments_json=json.dumps(args)
        )
    )
    result: dict[str, object] = json.loads(response.result_json)
    return result


def test_r8_the_search_archive_tool_ranks_pages_and_states_its_query_language(modulestore: Stub) -> None:
    a = with_filler(modulestore)
    for i in range(3):
        call(modulestore, a, "archive_thread", title=f"outage {i}",
             messages=[{"role": "user", "content": "database failover " * (i + 1)}])
    found = call(modulestore, a, "search_archive", query="failover", limit=2)
    threads = found["threads"]
    assert isinstance(threads, list) and [t["title"] for t in threads] == ["outage 2", "outage 1"]
    assert "**failover**" in threads[0]["snippet"] and threads[0]["score"] >= threads[1]["score"]
    token = found["next_page_token"]
    more = call(modulestore, a, "search_archive", query="failover", limit=2, page_token=token)
    assert [t["title"] for t in more["threads"]] == ["outage 0"] and more["next_page_token"] == ""
    assert_refused(
        lambda: call(modulestore, a, "search_archive", query='"unclosed'),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_QUERY",
    )
    (tool,) = [t for t in modulestore.ListTools(svc.ListToolsRequest(kind=c.KIND_ARCHIVE)).tools
               if t.name == "search_archive"]
    for feature in ('"a phrase"', "migrat*", "OR", "-word", "page_token"):
        assert feature in tool.description
    schema = json.loads(tool.parameters_json_schema)
    assert schema["properties"]["query"]["maxLength"] == 1000
    assert set(schema["properties"]) == {"query", "limit", "page_token"}


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("", "empty"),
        ("   \t ", "empty"),
        ("?! ... ***", "empty"),
        ("x" * 1001, "too_long"),
        (" ".join(f"w{i}" for i in range(33)), "too_many_terms"),
        ('"upgrade failed', "unclosed_quote"),
        ('upgrade"', "unclosed_quote"),
        ("OR upgrade", "dangling_or"),
        ("upgrade OR", "dangling_or"),
        ("upgrade OR OR downgrade", "dangling_or"),
        ("upgrade OR -downgrade", "dangling_or"),
        ("-flaky", "only_exclusions"),
        ("-flaky -\"timed out\"", "only_exclusions"),
        ("the of and", "only_common_words"),
    ],
)
def test_a_query_that_cannot_be_searched_is_refused_with_its_problem(
    modulestore: Stub, query: str, problem: str
) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    archive(modulestore, a, "anything", "upgrade failed")
    try:
        search(modulestore, a, query)
    except grpc.RpcError as err:
        assert status_of(err) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_QUERY")
        assert "search_archive" in (err.details() or "")  # type: ignore[attr-defined]
    else:
        raise AssertionError(f"{query!r} was answered")


# What a user might type that is syntax to an index or to SQL: read as words (and found when its words are in
# "deploy: the upgrade failed"), never an error.
FOUND = [
    "upgrade AND failed", "(upgrade", "upgrade)", "^upgrade", "upgrade*", "upgrade:*", "a* OR upgrade*",
    '"" upgrade', "upgrade -", "upgrade\\", "!!upgrade", "upgrade <-> failed", "{upgrade}", "upgrade 💥",
    "UPGRADE", "upgrade NOT failed", "%upgrade%", "upgrade_failed", "upgrade OR the", "-the upgrade",
    '"the"* upgrade', "\x00upgrade", "upgrade\u200bfailed", "deploy: upgrade; failed.",
]
NOT_FOUND = [
    "NEAR(upgrade failed)", "title:upgrade", "'; DROP TABLE x; --", "upgrade & failed | x",
    "upgrade <2> failed", "up+grade", "u*", "üpgrade",
]


@pytest.mark.parametrize("query", FOUND + NOT_FOUND)
def test_index_syntax_typed_by_a_user_is_read_as_words(modulestore: Stub, query: str) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    archive(modulestore, a, "deploy", "the upgrade failed")
    assert titles(search(modulestore, a, query)) == (["deploy"] if query in FOUND else [])


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_archived_before_the_index_existed_are_found(backend: str, tmp_path: Path) -> None:
    url = new_database_url(backend, "modulestore", tmp_path)
    run = new_run()
    try:
        with _service(url) as stub:
            a = open_agent(stub, run, "coder-0")
            for title, content in FILLER:
                archive(stub, a, title, content)
            archive(stub, a, "migration", "alembic upgrade failed")
        _downgrade_to_baseline(url)  # a database as it was before the index
        with _service(url) as stub:  # migrates on start, indexing what is there
            assert titles(search(stub, a, "alembic")) == ["migration"]
            archive(stub, a, "after", "alembic again")
            assert titles(search(stub, a, "alembic")) == ["after", "migration"]
    finally:
        drop_database(url)


class _service:
    """ModuleStore as its own process on `url`, and a stub to it."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> Stub:
        self.proc = ServiceProcess("modulestore", "--database-url", self.url, "--log-level", "warning")
        self.channel = open_channel(self.proc.address)
        return stubs(self.channel, "modulestore")

    def __exit__(self, *exc: object) -> None:
        self.channel.close()
        self.proc.terminate()


def _downgrade_to_baseline(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            config = Config()
            config.set_main_option("script_location", str(HERE / "modulestore"))
            config.attributes.update(connection=conn, version_table=version_table("modulestore"))
            command.downgrade(config, "ms_0001")
    finally:
        engine.dispose()
