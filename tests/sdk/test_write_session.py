"""The SDK's write session, sync and asyncio, over the real services: `with agent.session() as s` writes on
one stream, each call returning once durable and raising the typed error Write raises; pipelined writes
(`submit`, `asyncio.gather`) are applied and answered in the order sent; reads inside a session see every
write acknowledged before them."""

from __future__ import annotations

import asyncio

import pytest

from ggmodules.sdk import (
    Agent,
    AsyncClient,
    Capability,
    CapExceededError,
    Client,
    HandedOnError,
    Profile,
    SystemPromptAlreadySetError,
    TaskStatus,
)
from ggmodules.sdk.aio_session import AsyncWriteSession
from ggmodules.sdk.session import WriteSession
from tests.harness import Suite
from tests.sdk.conftest import PROFILES


def open_planner(gg: Client) -> Agent:
    run = gg.create_run("write-session", PROFILES, board=True)
    return gg.open_instance(run.id, "planner")


def test_writes_on_a_session_return_their_durable_results_and_refusals_are_typed(gg: Client) -> None:
    planner = open_planner(gg)
    with planner.session() as s:
        assert isinstance(s, WriteSession) and s.id == planner.id
        s.history.set_system_prompt("You plan.")
        first = s.history.append("user", "Build a CLI", start_turn=True)
        assert (first.last_seq, first.turn) == (1, 1)
        task = s.tasks.create("write the parser")
        s.tasks.update(task, status="in_progress")
        assert s.board.create_issue("GG", "parser") == "GG-1"
        with pytest.raises(SystemPromptAlreadySetError):
            s.history.set_system_prompt("again")
        # The refusal ended nothing: the session writes on, and its reads see what it wrote.
        assert s.history.append("assistant", "On it.").last_seq == 2
        assert [m.content for m in s.history.contents().messages] == ["Build a CLI", "On it."]
    assert [(t.title, t.status) for t in planner.tasks.contents().tasks] == [
        ("write the parser", TaskStatus.IN_PROGRESS)]


def test_r23_a_capped_write_on_a_session_raises_cap_exceeded(gg: Client) -> None:
    run = gg.create_run("caps", [Profile("capped", tasks=Capability(max_items=1))])
    agent = gg.open_instance(run.id, "capped")
    with agent.session() as s:
        s.tasks.create("one")
        with pytest.raises(CapExceededError):
            s.tasks.create("two")
    assert [t.title for t in agent.tasks.contents().tasks] == ["one"]


def test_submitted_writes_are_pipelined_and_acknowledged_in_order(gg: Client) -> None:
    planner = open_planner(gg)
    with planner.session() as s:
        acks = [s.submit(s.history.append, "user", f"part {i}") for i in range(30)]
        task = s.submit(s.tasks.create, "after the parts")
        assert [ack.result().last_seq for ack in acks] == list(range(1, 31))
        assert task.result() == 1
        # Leaving the block waits for writes whose acknowledgement nobody asked for.
        for i in range(5):
            s.submit(s.history.append, "user", f"tail {i}")
    messages = planner.history.contents().messages
    assert [m.content for m in messages] == [f"part {i}" for i in range(30)] + [f"tail {i}" for i in range(5)]


def test_a_session_of_an_agent_that_handed_on_raises_handed_on(suite: Suite) -> None:
    with Client(suite.registry.address, suite.modulestore.address, suite.transfer.address) as gg:
        run = gg.create_run("handed", [*PROFILES, Profile("coder", tasks=True)])
        planner = gg.open_instance(run.id, "planner")
        with planner.session() as s:
            s.tasks.create("before")
            successor = s.exec("coder").successor  # a transfer inside a session: an ordinary call
            with pytest.raises(HandedOnError):
                s.tasks.create("after")
        assert [t.title for t in successor.tasks.contents().tasks] == ["before"]


def test_async_session_writes_pipelined_with_gather_in_order(suite: Suite) -> None:
    async def session() -> None:
        async with AsyncClient(suite.registry.address, suite.modulestore.address) as gg:
            run = await gg.create_run("async-session", PROFILES, board=True)
            planner = await gg.open_instance(run.id, "planner")
            async with planner.session() as s:
                assert isinstance(s, AsyncWriteSession)
                await s.history.set_system_prompt("You plan.")
                results = await asyncio.gather(*(s.history.append("user", f"part {i}") for i in range(30)))
                assert [r.last_seq for r in results] == list(range(1, 31))
                with pytest.raises(SystemPromptAlreadySetError):
                    await s.history.set_system_prompt("again")
                assert await s.tasks.create("write the parser") == 1
                tail = [asyncio.ensure_future(s.history.append("user", f"tail {i}")) for i in range(5)]
            assert all(t.done() for t in tail)  # leaving the block waited for them
            window = await planner.history.contents()
            assert [m.content for m in window.messages] == [f"part {i}" for i in range(30)] + [
                f"tail {i}" for i in range(5)]

    asyncio.run(session())
