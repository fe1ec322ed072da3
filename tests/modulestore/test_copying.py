"""Fork and share, with every per-kind override (R11-R18)."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness.handing import planned, planned_request
from tests.harness.modulestore import (
    KINDS,
    Agent,
    Stub,
    append,
    b,
    bind,
    contents,
    fork_agent,
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
    copy = fork_agent(modulestore, a, "coder-1")

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
    copy = fork_agent(modulestore, a, "coder-1")
    append(modulestore, a, "original only")
    append(modulestore, copy, "copy only")
    _task(modulestore, a, "original task")
    ours = [m.content for m in contents(modulestore, a, c.KIND_HISTORY).contents.history.messages]
    theirs = [m.content for m in contents(modulestore, copy, c.KIND_HISTORY).contents.history.messages]
    assert ours == ["shared past", "original only"]
    assert theirs == ["shared past", "copy only"]
    assert contents(modulestore, copy, c.KIND_TASKS).contents.tasks.tasks == []
    # A fork of the fork reads through both ancestors and still sees only its own line.
    grandchild = fork_agent(modulestore, copy, "coder-2")
    append(modulestore, copy, "after second fork")
    assert [
        m.content for m in contents(modulestore, grandchild, c.KIND_HISTORY).contents.history.messages
    ] == ["shared past", "copy only"]


def test_r12_fork_leaves_undrained_telemetry_with_the_original(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    append(modulestore, a, "before the fork")
    _task(modulestore, a, "before the fork")
    fork_agent(modulestore, a, "coder-1")
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
    fork = fork_agent(modulestore, a, "coder-1")
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
    copy = fork_agent(modulestore, a, "coder-1")
    # The skills catalogue is the profile's directory store (R16): the copy holds it as `profile`.
    assert [copy.roster[k].origin for k in KINDS] == [
        c.ORIGIN_FORKED,
        c.ORIGIN_FORKED,
        c.ORIGIN_FORKED,
        c.ORIGIN_RUN,
        c.ORIGIN_PROFILE,
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
        copy = fork_agent(modulestore, a, "coder-1")
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
    copy = fork_agent(modulestore, a, "coder-1")
    history = contents(modulestore, copy, c.KIND_HISTORY).contents.history
    assert (history.system_prompt, history.system_prompt_set, history.turn) == ("", False, 1)
    write(modulestore, copy, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="You are coder-1."))
    assert contents(modulestore, a, c.KIND_HISTORY).contents.history.system_prompt == "You are coder-0."


def test_r18_code_loaded_through_a_skill_is_never_stored_copied_or_transferred(modulestore: Stub) -> None:
    """An agent loads code by reading a code skill: the body is kept once, in the catalogue, and what the
    agent holds of it is the skill's name in its read set. Reading it stores nothing more anywhere (no store,
    no bytes in the window or the catalogue); a fork copies the name, never the code, and adds no skills
    store; a handover passes the same stores on."""
    code = "import subprocess\n\ndef deploy():\n    subprocess.run(['make', 'release'])\n"
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    append(modulestore, a, "deploy it", start_turn=True)
    write(modulestore, a, c.KIND_SKILLS, put_skill=svc.PutSkill(name="deploy", description="ship", body=code))

    def stores() -> dict[str, ms.Store]:
        return {s.store_id: s for s in modulestore.ListStores(svc.ListStoresRequest(run_id=run)).stores}

    def holding(agent: Agent) -> dict[int, tuple[int, int]]:
        figures = {k: contents(modulestore, agent, k).store.figures for k in KINDS}
        return {k: (f.items, f.bytes) for k, f in figures.items()}

    before, held = stores(), holding(a)
    write(modulestore, a, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="deploy"))  # the agent loads the code
    assert stores().keys() == before.keys()
    grown = holding(a)
    assert {k: b for k, (_, b) in grown.items()} == {k: b for k, (_, b) in held.items()}  # not one byte more
    # Items: the read set counts its one name for this holder (R16); nothing else gained an item.
    assert {k: i - held[k][0] for k, (i, _) in grown.items() if i != held[k][0]} == {c.KIND_SKILLS: 1}
    assert list(contents(modulestore, a, c.KIND_SKILLS).contents.skills.read_set) == ["deploy"]

    copy = fork_agent(modulestore, a, "coder-1")
    added = stores().keys() - before.keys()
    own = (c.KIND_HISTORY, c.KIND_MEMORIES, c.KIND_TASKS, c.KIND_ARCHIVE)
    assert sorted(added) == sorted(copy[k] for k in own)
    assert copy[c.KIND_SKILLS] == a[c.KIND_SKILLS]
    assert holding(copy)[c.KIND_HISTORY] == held[c.KIND_HISTORY]
    assert stores()[a[c.KIND_SKILLS]].figures.bytes == before[a[c.KIND_SKILLS]].figures.bytes
    window = contents(modulestore, copy, c.KIND_HISTORY).contents.history
    assert code not in str(window)
    assert list(contents(modulestore, copy, c.KIND_SKILLS).contents.skills.read_set) == ["deploy"]

    forked = stores().keys()
    assert a.profile is not None
    resp = modulestore.Handover(planned_request(a, "coder-2", planned(a, a.profile)))
    assert stores().keys() == forked
    assert {o.kind: o.outcome for o in resp.outcomes} == {k: c.OUTCOME_CARRIED for k in KINDS}
