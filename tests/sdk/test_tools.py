"""Tools a runtime hands the model (R8): listed per kind, per agent, and executed through the SDK."""

from __future__ import annotations

import pytest

from ggmodules.sdk import Client, Kind, UnknownToolError
from tests.sdk.conftest import PROFILES


def test_r8_every_kind_publishes_tools_with_a_json_schema(gg: Client) -> None:
    tools = gg.list_tools()
    assert {t.kind for t in tools} == set(Kind)
    assert all(t.description and t.parameters()["type"] == "object" for t in tools)
    board = gg.list_tools("board")
    assert {t.kind for t in board} == {Kind.BOARD} and "create_issue" in {t.name for t in board}


def test_an_agent_is_handed_the_tools_of_the_kinds_it_holds(gg: Client) -> None:
    run = gg.create_run("tools", PROFILES, board=True)
    planner = gg.open_instance(run.id, "planner")
    bare = gg.open_instance(run.id, "bare")
    assert {t.kind for t in planner.tools()} == set(Kind)
    assert {t.kind for t in bare.tools()} == {Kind.HISTORY, Kind.BOARD}


def test_r8_board_and_archive_are_reachable_through_their_tools_alone(gg: Client) -> None:
    run = gg.create_run("tools", PROFILES, board=True)
    planner = gg.open_instance(run.id, "planner")
    created = planner.call_tool("create_issue", {"prefix": "GG", "title": "parser", "body": "recursive"})
    assert created.value() == {"issue_id": "GG-1"}
    assert planner.board.contents().issues[0].title == "parser"
    listed = gg.call_tool(run.id, planner.id, "list_issues", '{"prefix": "GG"}').value()
    assert [i["id"] for i in listed["issues"]] == ["GG-1"]

    thread = {"title": "kickoff", "messages": [{"role": "user", "content": "hello"}]}
    planner.call_tool("archive_thread", thread)
    found = planner.call_tool("search_archive", {"query": "hello"}).value()
    assert [t["title"] for t in found["threads"]] == ["kickoff"]


def test_a_tool_the_suite_does_not_publish_is_refused_typed(gg: Client) -> None:
    run = gg.create_run("tools", PROFILES)
    planner = gg.open_instance(run.id, "planner")
    with pytest.raises(UnknownToolError):
        planner.call_tool("rm_rf", {})
