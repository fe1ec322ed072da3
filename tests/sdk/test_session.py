"""The common path of a runtime through the sync client, over the real services."""

from __future__ import annotations

import pytest

from ggmodules.sdk import (
    Agent,
    BoardContents,
    Client,
    HistoryContents,
    InvalidQueryError,
    IssueStatus,
    Kind,
    KindNotHeldError,
    MemoryScope,
    Origin,
    Run,
    RunStatus,
    SearchMode,
    SearchPage,
    TaskStatus,
)
from tests.sdk.conftest import PROFILES


def open_planner(gg: Client, *, board: bool = True) -> Agent:
    run = gg.create_run("session", PROFILES, board=board)
    return gg.open_instance(run.id, "planner")


def test_r32_open_instance_reports_roster_and_hands_out_a_handle_per_held_kind(gg: Client) -> None:
    planner = open_planner(gg)
    assert [row.kind for row in planner.roster] == list(Kind)
    assert [row.store_id for row in planner.roster] == [f"{k.value}-0" for k in Kind]
    memories = planner.instance.row("memories")
    assert (memories.origin, memories.scope, memories.may_write) == (Origin.PROFILE, MemoryScope.AGENT, True)
    assert planner.instance.row(Kind.BOARD).origin == "run"
    assert planner.history.store_id == planner.store_id("history") == "history-0"
    assert planner.board.store_id == "board-0"

    bare = gg.open_instance(planner.run_id, "bare")
    assert bare.holds("history") and not bare.holds("tasks")
    with pytest.raises(KindNotHeldError, match="tasks"):
        bare.tasks.create("never sent")


def test_r4_window_holds_system_prompt_thread_views_pins_and_turns(gg: Client) -> None:
    history = open_planner(gg).history
    history.set_system_prompt("You plan.")
    first = history.append("user", "Build a CLI", start_turn=True)
    assert (first.last_seq, first.turn) == (1, 1)
    second = history.extend([("assistant", "On it."), ("tool", "{}")])
    assert (second.last_seq, second.turn, second.figures.items) == (3, 1, 3)
    history.open_view("readme", "# CLI")
    history.pin("goal", "ship it")
    history.open_view("scratch", "tmp")
    history.close_view("scratch")

    window = history.contents()
    assert isinstance(window, HistoryContents)
    assert window.system_prompt == "You plan."
    assert [(m.seq, m.role, m.content, m.turn) for m in window.messages] == [
        (1, "user", "Build a CLI", 1), (2, "assistant", "On it.", 1), (3, "tool", "{}", 1)]
    assert [(b.id, b.content) for b in window.open_views] == [("readme", "# CLI")]
    assert [(b.id, b.content) for b in window.pinned_blocks] == [("goal", "ship it")]
    history.unpin("goal")
    assert history.contents().pinned_blocks == ()
    page = history.contents(after_seq=1, page_size=1)
    assert [m.seq for m in page.messages] == [2] and page.message_count == 3


def test_tasks_form_a_dag_with_statuses_as_words(gg: Client) -> None:
    tasks = open_planner(gg).tasks
    parser = tasks.create("write the parser")
    cli = tasks.create("wire the CLI", description="argparse", blocked_by=[parser])
    tasks.update(parser, status="done")
    tasks.update(cli, status=TaskStatus.IN_PROGRESS, remove_blocked_by=[parser])
    listing = tasks.contents()
    assert [(t.id, t.title, t.status, t.blocked_by) for t in listing.tasks] == [
        (parser, "write the parser", "done", ()), (cli, "wire the CLI", TaskStatus.IN_PROGRESS, ())]
    assert listing.next_id == cli + 1


def test_r14_board_is_one_per_run_with_a_counter_per_prefix(gg: Client) -> None:
    planner = open_planner(gg)
    writer = gg.open_instance(planner.run_id, "writer")
    assert writer.board.store_id == planner.board.store_id
    assert planner.board.create_issue("GG", "parser") == "GG-1"
    assert writer.board.create_issue("GG", "cli", body="argparse") == "GG-2"
    assert planner.board.create_issue("OPS", "ci") == "OPS-1"
    writer.board.update_issue("GG-1", status="done")
    board = planner.board.contents()
    assert isinstance(board, BoardContents)
    assert [(i.id, i.status) for i in board.issues] == [
        ("GG-1", IssueStatus.DONE), ("GG-2", "open"), ("OPS-1", "open")]
    assert board.counters == {"GG": 2, "OPS": 1}


def test_memories_under_each_strategy_are_attributed_to_their_writer(gg: Client) -> None:
    planner = open_planner(gg)
    planner.memories.write_pad("remember the CLI")
    pad = planner.memories.contents()
    assert pad.strategy == "scratchpad"
    assert [(e.body, e.agent_id) for e in pad.entries] == [("remember the CLI", planner.id)]

    writer = gg.open_instance(planner.run_id, "writer")
    writer.memories.write_file("style.md", "short names", index_line="naming")
    writer.memories.write_file("tmp.md", "x")
    writer.memories.delete_file("tmp.md")
    notes = writer.memories.contents()
    assert notes.strategy == "markdown_index"
    assert [(e.name, e.body, e.index_line, e.agent_id) for e in notes.entries] == [
        ("style.md", "short names", "naming", writer.id)]


def test_skills_catalogue_and_read_set(gg: Client) -> None:
    skills = open_planner(gg).skills
    skills.put("planning", "how to plan", "1. think")
    skills.put("review", "how to review", "read it")
    skills.read_skill("planning")
    held = skills.contents()
    assert held.directory == "planning"
    assert [(s.name, s.description) for s in held.catalogue] == [
        ("planning", "how to plan"), ("review", "how to review")]
    assert held.read_set == ("planning",)


def test_archive_threads_are_archived_and_found_by_text(gg: Client) -> None:
    archive = open_planner(gg).archive
    first = archive.archive_thread("parser talk", [("user", "use a recursive descent parser")])
    second = archive.archive_thread("ci talk", [("user", "github actions")])
    assert second > first
    found = archive.search("recursive descent")
    assert [(t.id, t.title) for t in found] == [(first, "parser talk")]
    assert found[0].messages[0].content == "use a recursive descent parser"
    assert [t.title for t in archive.contents().threads] == ["parser talk", "ci talk"]
    # Ranked pages with a score and a snippet each, and the mode that answered.
    third = archive.archive_thread("parser rewrite", [("user", "the parser again: a parser generator")])
    page = archive.search("parser", page_size=1)
    assert isinstance(page, SearchPage) and page.mode == SearchMode.TEXT == "text"
    assert [t.id for t in page] == [third] and "**parser**" in page[0].snippet and page[0].score > 0
    rest = archive.search("parser", page_size=1, page_token=page.next_page_token)
    assert [t.id for t in rest] == [first] and rest.next_page_token == ""
    with pytest.raises(InvalidQueryError) as refused:
        archive.search('"recursive descent')
    assert refused.value.problem == "unclosed_quote"


def test_r10_prompt_comes_module_by_module_and_r8_board_and_archive_contribute_nothing(gg: Client) -> None:
    planner = open_planner(gg)
    planner.history.set_system_prompt("You plan.")
    planner.history.append("user", "Build a CLI", start_turn=True)
    planner.tasks.create("write the parser")
    planner.board.create_issue("GG", "parser")
    contributions = planner.prompt()
    assert [c.kind for c in contributions] == list(Kind)
    by_kind = {c.kind: c for c in contributions}
    assert by_kind[Kind.BOARD].contributes_nothing and by_kind[Kind.BOARD].messages == ()
    assert by_kind[Kind.ARCHIVE].contributes_nothing and by_kind[Kind.ARCHIVE].messages == ()
    window = by_kind[Kind.HISTORY].messages
    assert (window[0].section, window[0].content) == ("system_prompt", "You plan.")
    assert any(m.section == "tasks" and "write the parser" in m.content for m in by_kind[Kind.TASKS].messages)
    assert gg.render_prompt(planner.run_id, planner.id) == contributions


def test_r17_fork_copies_window_and_tasks_and_shares_board_and_agent_scoped_memories(gg: Client) -> None:
    planner = open_planner(gg)
    planner.history.set_system_prompt("You plan.")
    planner.history.append("user", "Build a CLI", start_turn=True)
    planner.tasks.create("write the parser")

    copy = planner.fork()
    assert isinstance(copy, Agent)
    assert copy.id == "planner-1" and copy.instance.parent_agent_id == planner.id
    assert copy.history.store_id != planner.history.store_id
    assert copy.instance.row("history").origin == Origin.FORKED
    assert copy.board.store_id == planner.board.store_id
    assert copy.memories.store_id == planner.memories.store_id
    window = copy.history.contents()
    assert window.system_prompt is None  # R24
    assert [m.content for m in window.messages] == ["Build a CLI"]
    copy.tasks.create("diverge")
    assert [t.title for t in planner.tasks.contents().tasks] == ["write the parser"]


def test_spawn_opens_a_subagent_of_the_agent(gg: Client) -> None:
    planner = open_planner(gg)
    sub = planner.spawn("writer")
    assert sub.instance.parent_agent_id == planner.id and sub.profile == "writer"
    again = gg.spawn_subagent(planner.run_id, planner.id, "bare")
    assert again.instance.cause == "spawn"


def test_registry_reads_and_run_lifecycle(gg: Client) -> None:
    planner = open_planner(gg)
    run = gg.get_run(planner.run_id)
    assert run.status == RunStatus.RUNNING and run.board
    assert [p.name for p in run.profiles] == ["planner", "writer", "bare"]
    writer = gg.open_instance(run.id, "writer")
    assert gg.get_instance(run.id, writer.id) == writer.instance
    assert gg.agent(run.id, planner.id).instance == planner.instance
    first = gg.list_instances(run.id, page_size=1)
    assert len(first) == 1 and first.next_page_token
    rest = gg.list_instances(run.id, page_token=first.next_page_token)
    assert [i.agent_id for i in (*first, *rest)] == [planner.id, writer.id]
    assert run.id in {r.id for r in _all_runs(gg)}
    assert gg.finish_run(run.id).status == "finished"


def _all_runs(gg: Client) -> list[Run]:
    runs: list[Run] = []
    token = ""
    while True:
        page = gg.list_runs(page_size=50, page_token=token)
        runs.extend(page)
        if not page.next_page_token:
            return runs
        token = page.next_page_token


def test_stores_read_with_holders_and_listed_by_kind(gg: Client) -> None:
    planner = open_planner(gg)
    copy = planner.fork()
    board = gg.get_store(planner.run_id, planner.board.store_id, copy.id)
    assert board.kind == Kind.BOARD
    assert {(h.agent_id, h.origin) for h in board.holders} == {(planner.id, "run"), (copy.id, "run")}
    assert isinstance(board.contents, BoardContents)
    histories = gg.list_stores(planner.run_id, kind="history")
    assert [s.id for s in histories] == ["history-0", "history-1"]
    assert all(s.contents is None for s in histories)
    assert {s.kind for s in gg.list_stores(planner.run_id)} == set(Kind)
    own = planner.tasks.store()
    assert own.id == "tasks-0" and own.holders[0].agent_id == planner.id
