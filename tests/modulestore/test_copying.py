"""Fork and share, with every per-kind override (R11-R18)."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.modulestore.plans import (
    KINDS,
    Stub,
    append,
    b,
    bind,
    contents,
    fork_bindings,
    new_run,
    open_agent,
    shape,
    streams,
    write,
)


def _task(stub: Stub, agent: object, title: str) -> svc.WriteResponse:
    return write(stub, agent, c.KIND_TASKS, create_task=svc.CreateTask(title=title))  # type: ignore[arg-type]


def test_r11_fork_copies_contents_and_carries_counters(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    append(modulestore, a, "one", "two", start_turn=True)
    append(modulestore, a, "three", start_turn=True)
    _task(modulestore, a, "first")
    _task(modulestore, a, "second")
    copy = bind(modulestore, run, "coder-1", fork_bindings(a), cause="fork", parent="coder-0")

    # Contents copied under a new id.
    assert copy[c.KIND_HISTORY] != a[c.KIND_HISTORY] and copy[c.KIND_TASKS] != a[c.KIND_TASKS]
    history = contents(modulestore, copy, c.KIND_HISTORY).contents.history
    assert [m.content for m in history.messages] == ["one", "two", "three"] and history.turn == 2
    assert [t.title for t in contents(modulestore, copy, c.KIND_TASKS).contents.tasks.tasks] == [
        "first",
        "second",
    ]

    # Counters carried forward, not restarted: message seq, turn, task ids.
    reply = append(modulestore, copy, "four", start_turn=True)
    assert (reply.last_seq, reply.turn) == (4, 3)
    assert _task(modulestore, copy, "third").task_id == 3


def test_r11_writes_diverge_after_a_fork(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    append(modulestore, a, "shared past")
    copy = bind(modulestore, run, "coder-1", fork_bindings(a), cause="fork", parent="coder-0")
    append(modulestore, a, "original only")
    append(modulestore, copy, "copy only")
    _task(modulestore, a, "original task")
    ours = [m.content for m in contents(modulestore, a, c.KIND_HISTORY).contents.history.messages]
    theirs = [m.content for m in contents(modulestore, copy, c.KIND_HISTORY).contents.history.messages]
    assert ours == ["shared past", "original only"]
    assert theirs == ["shared past", "copy only"]
    assert contents(modulestore, copy, c.KIND_TASKS).contents.tasks.tasks == []
    # A fork of the fork reads through both ancestors and still sees only its own line.
    grandchild = bind(modulestore, run, "coder-2", fork_bindings(copy), cause="fork", parent="coder-1")
    append(modulestore, copy, "after second fork")
    assert [
        m.content for m in contents(modulestore, grandchild, c.KIND_HISTORY).contents.history.messages
    ] == ["shared past", "copy only"]


def test_r12_fork_leaves_undrained_telemetry_with_the_original(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    append(modulestore, a, "before the fork")
    _task(modulestore, a, "before the fork")
    bind(modulestore, run, "coder-1", fork_bindings(a), cause="fork", parent="coder-0")
    copy_stream = streams(modulestore, run)["coder-1"]
    assert [body for body, _ in shape(copy_stream)] == ["roster"] + ["bind"] * 6
    assert all(ev.WhichOneof("body") != "write" for ev in copy_stream)
    assert [body for body, _ in shape(streams(modulestore, run)["coder-0"])].count("write") == 2


def test_r13_share_is_one_store_each_reads_the_other(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    _task(modulestore, a, "from a")
    b_agent = bind(
        modulestore,
        run,
        "helper-0",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(c.KIND_TASKS, ms.BIND_ACTION_SHARE, source_store_id=a[c.KIND_TASKS], origin=c.ORIGIN_INHERITED),
        ],
    )
    _task(modulestore, b_agent, "from helper")
    assert b_agent[c.KIND_TASKS] == a[c.KIND_TASKS]
    for reader in (a, b_agent):
        titles = [t.title for t in contents(modulestore, reader, c.KIND_TASKS).contents.tasks.tasks]
        assert titles == ["from a", "from helper"]
    holders = contents(modulestore, a, c.KIND_TASKS).store.holders
    assert sorted((h.agent_id, h.origin) for h in holders) == [
        ("coder-0", c.ORIGIN_CREATED),
        ("helper-0", c.ORIGIN_INHERITED),
    ]


def test_r13_a_new_sharer_gets_no_backlog_and_reports_only_its_own_writes(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    for i in range(3):
        _task(modulestore, a, f"backlog {i}")
    helper = bind(
        modulestore,
        run,
        "helper-0",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(c.KIND_TASKS, ms.BIND_ACTION_SHARE, source_store_id=a[c.KIND_TASKS], origin=c.ORIGIN_INHERITED),
        ],
    )
    _task(modulestore, helper, "helper's")
    _task(modulestore, a, "coder's")
    by_agent = streams(modulestore, run)
    tasks = a[c.KIND_TASKS]
    assert shape(by_agent["helper-0"]) == [
        ("roster", ""),
        ("bind", helper[c.KIND_HISTORY]),
        ("bind", tasks),
        ("write", tasks),
        ("snapshot", tasks),
    ]
    assert shape(by_agent["coder-0"])[7:] == [("write", tasks)] * 3 + [("snapshot", tasks), ("write", tasks)]
    assert by_agent["helper-0"][4].snapshot.written_by == "coder-0"


def test_r14_a_board_fork_yields_a_share_and_one_counter(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    first = write(modulestore, a, c.KIND_BOARD, create_issue=svc.CreateIssue(prefix="ABC", title="one"))
    other = bind(
        modulestore,
        run,
        "coder-1",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(c.KIND_BOARD, ms.BIND_ACTION_FORK, source_store_id=a[c.KIND_BOARD], origin=c.ORIGIN_FORKED),
        ],
    )
    assert other[c.KIND_BOARD] == a[c.KIND_BOARD]
    assert other.roster[c.KIND_BOARD].origin == c.ORIGIN_RUN
    second = write(modulestore, other, c.KIND_BOARD, create_issue=svc.CreateIssue(prefix="ABC", title="two"))
    third = write(modulestore, a, c.KIND_BOARD, create_issue=svc.CreateIssue(prefix="ABC", title="three"))
    assert [first.issue_id, second.issue_id, third.issue_id] == ["ABC-1", "ABC-2", "ABC-3"]
    boards = modulestore.ListStores(svc.ListStoresRequest(run_id=run, kind=c.KIND_BOARD)).stores
    assert len(boards) == 1


def test_r15_a_history_share_yields_an_independent_copy(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    append(modulestore, a, "mine")
    other = bind(
        modulestore,
        run,
        "coder-1",
        [
            b(
                c.KIND_HISTORY,
                ms.BIND_ACTION_SHARE,
                source_store_id=a[c.KIND_HISTORY],
                origin=c.ORIGIN_INHERITED,
            )
        ],
    )
    assert other[c.KIND_HISTORY] != a[c.KIND_HISTORY]
    assert other.roster[c.KIND_HISTORY].origin == c.ORIGIN_FORKED
    append(modulestore, other, "theirs")
    assert [m.content for m in contents(modulestore, a, c.KIND_HISTORY).contents.history.messages] == ["mine"]
    holders = contents(modulestore, a, c.KIND_HISTORY).store.holders
    assert [h.agent_id for h in holders] == ["coder-0"]


def test_r16_skills_catalogue_is_shared_and_the_read_set_follows_the_window(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0", directory="shared-skills")
    write(
        modulestore, a, c.KIND_SKILLS, put_skill=svc.PutSkill(name="git", description="use git", body="git …")
    )
    write(
        modulestore,
        a,
        c.KIND_SKILLS,
        put_skill=svc.PutSkill(name="sql", description="use sql", body="SELECT"),
    )
    write(modulestore, a, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="git"))
    # Another profile naming the same directory holds the same catalogue, with its own empty read set.
    other = open_agent(modulestore, run, "reviewer-0", directory="shared-skills")
    fork = bind(modulestore, run, "coder-1", fork_bindings(a), cause="fork", parent="coder-0")
    share = bind(
        modulestore,
        run,
        "coder-2",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(
                c.KIND_SKILLS,
                ms.BIND_ACTION_SHARE,
                source_store_id=a[c.KIND_SKILLS],
                read_set_source_agent_id="coder-0",
                origin=c.ORIGIN_INHERITED,
            ),
        ],
    )
    assert a[c.KIND_SKILLS] == other[c.KIND_SKILLS] == fork[c.KIND_SKILLS] == share[c.KIND_SKILLS]

    def read_set(agent: object) -> list[str]:
        return list(contents(modulestore, agent, c.KIND_SKILLS).contents.skills.read_set)  # type: ignore[arg-type]

    assert (read_set(a), read_set(other), read_set(fork), read_set(share)) == (["git"], [], ["git"], ["git"])
    # A fork's read set is a copy; a share's is the same set.
    write(modulestore, share, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="sql"))
    assert (read_set(a), read_set(fork), read_set(share)) == (["git", "sql"], ["git"], ["git", "sql"])
    write(modulestore, fork, c.KIND_SKILLS, put_skill=svc.PutSkill(name="new", description="d", body="b"))
    assert [s.name for s in contents(modulestore, other, c.KIND_SKILLS).contents.skills.catalogue] == [
        "git",
        "sql",
        "new",
    ]


def test_r17_fork_of_an_agent_applies_the_rules_per_kind(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    write(modulestore, a, c.KIND_MEMORIES, write_pad=svc.WritePad(text="notes"))
    copy = bind(modulestore, run, "coder-1", fork_bindings(a), cause="fork", parent="coder-0")
    assert [copy.roster[k].origin for k in KINDS] == [
        c.ORIGIN_FORKED,
        c.ORIGIN_FORKED,
        c.ORIGIN_FORKED,
        c.ORIGIN_RUN,
        c.ORIGIN_FORKED,
        c.ORIGIN_FORKED,
    ]
    new_ids = {k for k in KINDS if copy[k] != a[k]}
    assert new_ids == {c.KIND_HISTORY, c.KIND_MEMORIES, c.KIND_TASKS, c.KIND_ARCHIVE}
    # The copy's memories are re-stamped with the copy's agent id; the original's are not.
    pad = contents(modulestore, copy, c.KIND_MEMORIES).contents.memories.entries
    assert [(e.body, e.agent_id) for e in pad] == [("notes", "coder-1")]
    assert contents(modulestore, a, c.KIND_MEMORIES).contents.memories.entries[0].agent_id == "coder-0"


def test_r17_memories_follow_the_forkers_scope(modulestore: Stub) -> None:
    for scope, expect_shared in (
        (c.MEMORY_SCOPE_INSTANCE, False),
        (c.MEMORY_SCOPE_AGENT, True),
        (c.MEMORY_SCOPE_INHERITED, True),
    ):
        run = new_run()
        a = open_agent(modulestore, run, "coder-0", scope=scope)
        copy = bind(
            modulestore, run, "coder-1", fork_bindings(a, scope=scope), cause="fork", parent="coder-0"
        )
        assert (copy[c.KIND_MEMORIES] == a[c.KIND_MEMORIES]) is expect_shared
        assert copy.roster[c.KIND_MEMORIES].scope == scope
        write(modulestore, copy, c.KIND_MEMORIES, write_pad=svc.WritePad(text="by the copy"))
        seen = contents(modulestore, a, c.KIND_MEMORIES).contents.memories.entries
        assert [e.agent_id for e in seen] == (["coder-1"] if expect_shared else [])


def test_r24_a_forked_window_has_an_empty_system_prompt_slot(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    write(modulestore, a, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="You are coder-0."))
    append(modulestore, a, "hi", start_turn=True)
    copy = bind(modulestore, run, "coder-1", fork_bindings(a), cause="fork", parent="coder-0")
    history = contents(modulestore, copy, c.KIND_HISTORY).contents.history
    assert (history.system_prompt, history.system_prompt_set, history.turn) == ("", False, 1)
    write(modulestore, copy, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="You are coder-1."))
    assert contents(modulestore, a, c.KIND_HISTORY).contents.history.system_prompt == "You are coder-0."


def test_r18_only_the_six_kinds_are_stored_and_copied(modulestore: Stub) -> None:
    """Whatever an agent loaded through a code skill is not a module: a fork binds exactly the six kinds and
    the run holds no store outside them."""
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    write(
        modulestore,
        a,
        c.KIND_SKILLS,
        put_skill=svc.PutSkill(name="py", description="python", body="import x"),
    )
    write(modulestore, a, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="py"))
    copy = bind(modulestore, run, "coder-1", fork_bindings(a), cause="fork", parent="coder-0")
    assert sorted(copy.roster) == KINDS
    stores = modulestore.ListStores(svc.ListStoresRequest(run_id=run)).stores
    assert {s.kind for s in stores} <= set(KINDS)
    # The read set records which bodies are pinned; nothing else about the skill travels.
    assert list(contents(modulestore, copy, c.KIND_SKILLS).contents.skills.read_set) == ["py"]
