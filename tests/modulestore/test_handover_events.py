"""A handover's events (R30-R32, R36): drains on the predecessor's stream, then the successor's roster, then
one restate per module the successor holds, read back from ReadOutbox."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness.handing import carry_all, hand_over, planned, planned_request, store
from tests.harness.modulestore import (
    KINDS,
    Agent,
    Stub,
    append,
    new_run,
    open_agent,
    profile_of,
    shape,
    streams,
    write,
)


def test_r30_r31_r32_drains_then_the_successors_roster_then_its_restates(modulestore: Stub) -> None:
    run = new_run()
    p = open_agent(modulestore, run, "planner-0")
    helper = open_agent(modulestore, run, "helper-0")
    append(modulestore, p, "plan", start_turn=True)
    write(modulestore, p, c.KIND_MEMORIES, write_pad=svc.WritePad(text="remember"))
    write(modulestore, p, c.KIND_TASKS, create_task=svc.CreateTask(title="design"))
    write(modulestore, helper, c.KIND_BOARD, create_issue=svc.CreateIssue(prefix="OPS", title="deploy"))
    before = {agent: len(evs) for agent, evs in streams(modulestore, run).items()}
    figures = {k: store(modulestore, run, p[k]).figures for k in (c.KIND_MEMORIES, c.KIND_SKILLS)}

    # Transfer's plan for the edge plan -> code carrying history, memories and tasks to a coder keeping a
    # markdown index and no archive: memories re-initialized, skills fresh, archive dropped.
    coder_profile = profile_of("coder", strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX, without=("archive",))
    plan = planned(p, coder_profile, edge=("history", "memories", "tasks"))
    resp = modulestore.Handover(planned_request(p, "coder-0", plan))
    coder = Agent(run, "coder-0", {r.kind: r for r in resp.roster if r.enabled})
    after = streams(modulestore, run)

    drains = after["planner-0"][before["planner-0"] :]
    assert shape(drains) == [("drain", p[k]) for k in (c.KIND_MEMORIES, c.KIND_SKILLS, c.KIND_ARCHIVE)]
    assert all(ev.drain.successor_agent_id == "coder-0" for ev in drains)
    assert drains[0].drain.figures == figures[c.KIND_MEMORIES] and drains[0].drain.figures.items == 1

    mine = after["coder-0"]
    held = [c.KIND_HISTORY, c.KIND_MEMORIES, c.KIND_TASKS, c.KIND_BOARD, c.KIND_SKILLS]
    assert shape(mine) == [("roster", "")] + [("restate", coder[k]) for k in held]
    assert [ev.stream_seq for ev in mine] == list(range(1, 7))
    roster = mine[0].roster
    assert (roster.profile, roster.cause, roster.predecessor_agent_id, roster.parent_agent_id) == (
        "coder",
        "transition",
        "planner-0",
        "",
    )
    # The note Transfer produced is the one the roster states, and it says what happened to each kind.
    note = roster.opening_note
    assert note == plan.opening_note
    assert note.startswith("history, tasks and board arrived from planner-0")
    for word, what in (("memories", "re-initialized"), ("skills", "fresh"), ("archive", "dropped")):
        sentence = next(s for s in note.split("; ") if s.startswith(word))
        assert what in sentence, (word, sentence)
    assert [(r.kind, r.store_id, r.enabled) for r in roster.rows] == [
        (k, coder[k] if k in held else "", k in held) for k in KINDS
    ]
    restates = {ev.kind: ev.restate for ev in mine[1:]}
    assert {k: r.outcome for k, r in restates.items()} == {
        c.KIND_HISTORY: c.OUTCOME_CARRIED,
        c.KIND_MEMORIES: c.OUTCOME_REINITIALIZED,
        c.KIND_TASKS: c.OUTCOME_CARRIED,
        c.KIND_BOARD: c.OUTCOME_CARRIED,
        c.KIND_SKILLS: c.OUTCOME_FRESH,
    }
    assert all(r.predecessor_agent_id == "planner-0" for r in restates.values())
    assert [t.title for t in restates[c.KIND_TASKS].contents.tasks.tasks] == ["design"]
    assert [i.id for i in restates[c.KIND_BOARD].contents.board.issues] == ["OPS-1"]
    assert restates[c.KIND_MEMORIES].figures.items == 0

    # Across streams: every drain before the roster, the roster before every restate (R30).
    assert max(ev.origin_seq for ev in drains) < mine[0].origin_seq < min(ev.origin_seq for ev in mine[1:])
    # Nothing else: no snapshot to the board's other holder for a handover.
    assert len(after["helper-0"]) == before["helper-0"]


def test_r31_a_restated_window_carries_no_thread_and_an_archive_no_contents(modulestore: Stub) -> None:
    run = new_run()
    p = open_agent(modulestore, run, "planner-0")
    write(modulestore, p, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="You are planner-0."))
    append(modulestore, p, "one", "two", start_turn=True)
    write(
        modulestore,
        p,
        c.KIND_ARCHIVE,
        archive_thread=svc.ArchiveThread(title="old", messages=[ms.MessageInput(role="user", content="x")]),
    )
    coder, _ = hand_over(modulestore, p, "coder-0", carry_all())
    mine = streams(modulestore, run)["coder-0"]
    assert shape(mine) == [("roster", "")] + [("restate", coder[k]) for k in KINDS]
    history = next(ev.restate for ev in mine if ev.kind == c.KIND_HISTORY)
    h = history.contents.history
    assert (list(h.messages), h.message_count, h.turn, h.system_prompt_set) == ([], 2, 1, False)
    assert history.figures.items == 2
    archive = next(ev.restate for ev in mine if ev.kind == c.KIND_ARCHIVE)
    assert not archive.HasField("contents") and archive.figures.items == 1
    # Nothing was drained: the successor carries every store.
    assert [ev.WhichOneof("body") for ev in streams(modulestore, run)["planner-0"]].count("drain") == 0


def test_r36_the_predecessors_roster_is_stated_once_and_never_restated(modulestore: Stub) -> None:
    run = new_run()
    p = open_agent(modulestore, run, "planner-0")
    coder, _ = hand_over(modulestore, p, "coder-0", carry_all())
    hand_over(modulestore, coder, "reviewer-0", carry_all(), cause="transition")
    grouped = streams(modulestore, run)
    for agent in ("planner-0", "coder-0", "reviewer-0"):
        bodies = [ev.WhichOneof("body") for ev in grouped[agent]]
        assert bodies.count("roster") == 1 and bodies[0] == "roster"
    assert "restate" not in [ev.WhichOneof("body") for ev in grouped["planner-0"]]
    # The planner's own roster event still names what it held when it opened.
    assert [r.store_id for r in grouped["planner-0"][0].roster.rows] == [p[k] for k in KINDS]
    assert grouped["reviewer-0"][0].roster.predecessor_agent_id == "coder-0"
