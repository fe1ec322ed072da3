"""memories (scratchpad, markdown_index; entries attributed to their writer) and archive (archive, search)."""

from __future__ import annotations

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused
from tests.harness.modulestore import Stub, contents, fork_agent, new_run, open_agent, write


def test_markdown_index_files_are_written_replaced_and_deleted(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0", strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX)
    write(
        modulestore, a, c.KIND_MEMORIES, write_file=svc.WriteFile(name="a.md", body="A", index_line="about a")
    )
    write(modulestore, a, c.KIND_MEMORIES, write_file=svc.WriteFile(name="b.md", body="B"))
    write(
        modulestore,
        a,
        c.KIND_MEMORIES,
        write_file=svc.WriteFile(name="a.md", body="A2", index_line="a, again"),
    )
    write(modulestore, a, c.KIND_MEMORIES, delete_file=svc.DeleteFile(name="b.md"))
    got = contents(modulestore, a, c.KIND_MEMORIES)
    assert got.store.strategy == c.MEMORY_STRATEGY_MARKDOWN_INDEX
    assert [(e.name, e.body, e.index_line, e.agent_id) for e in got.contents.memories.entries] == [
        ("a.md", "A2", "a, again", "coder-0")
    ]
    assert got.store.figures.items == 1
    assert_refused(
        lambda: write(modulestore, a, c.KIND_MEMORIES, write_pad=svc.WritePad(text="x")),
        grpc.StatusCode.FAILED_PRECONDITION, "WRONG_KIND",
    )


def test_a_shared_scratchpad_records_who_wrote_it(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0", scope=c.MEMORY_SCOPE_AGENT)
    other = open_agent(modulestore, run, "coder-1", scope=c.MEMORY_SCOPE_AGENT)
    write(modulestore, a, c.KIND_MEMORIES, write_pad=svc.WritePad(text="from 0"))
    write(modulestore, other, c.KIND_MEMORIES, write_pad=svc.WritePad(text="from 1"))
    entries = contents(modulestore, a, c.KIND_MEMORIES).contents.memories.entries
    assert [(e.body, e.agent_id) for e in entries] == [("from 1", "coder-1")]
    assert other.roster[c.KIND_MEMORIES].origin == c.ORIGIN_PROFILE


def test_archive_search_finds_by_every_word_newest_first(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    for title, text in (
        ("db migration", "alembic upgrade failed"),
        ("db tuning", "vacuum and analyze"),
        ("frontend", "css grid"),
    ):
        write(
            modulestore,
            a,
            c.KIND_ARCHIVE,
            archive_thread=svc.ArchiveThread(
                title=title, messages=[ms.MessageInput(role="user", content=text)]
            ),
        )
    fork = fork_agent(modulestore, a, "coder-1")

    def search(agent: object, query: str) -> list[str]:
        return [
            t.title
            for t in modulestore.SearchArchive(
                svc.SearchArchiveRequest(
                    run_id=run,
                    agent_id=agent.agent_id,
                    store_id=agent[c.KIND_ARCHIVE],  # type: ignore[attr-defined]
                    query=query,
                )
            ).threads
        ]

    assert search(a, "DB") == ["db tuning", "db migration"]
    assert search(a, "db upgrade") == ["db migration"]
    assert search(a, "kubernetes") == []
    # The fork reads the same threads through copy-on-write and archives on its own line.
    assert search(fork, "db") == ["db tuning", "db migration"]
    thread_id = write(
        modulestore,
        fork,
        c.KIND_ARCHIVE,
        archive_thread=svc.ArchiveThread(
            title="db forked", messages=[ms.MessageInput(role="user", content="only in the fork")]
        ),
    ).thread_id
    assert thread_id == 4 and search(a, "forked") == [] and search(fork, "forked") == ["db forked"]
    assert_refused(
        lambda: modulestore.SearchArchive(
            svc.SearchArchiveRequest(run_id=run, agent_id="coder-0", store_id=a[c.KIND_TASKS], query="x")
        ),
        grpc.StatusCode.FAILED_PRECONDITION, "WRONG_KIND",
    )
    assert_refused(
        lambda: modulestore.SearchArchive(
            svc.SearchArchiveRequest(run_id=run, agent_id="coder-0", store_id=fork[c.KIND_ARCHIVE], query="x")
        ),
        grpc.StatusCode.PERMISSION_DENIED, "NOT_A_HOLDER",
    )
