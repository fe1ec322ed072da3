"""The same common path through the asyncio client (each test drives its coroutine with asyncio.run)."""

from __future__ import annotations

import asyncio

import pytest

from ggmodules.sdk import AsyncAgent, AsyncClient, Kind, Origin, SystemPromptAlreadySetError, TaskStatus
from tests.harness import Suite
from tests.sdk.conftest import PROFILES


def test_async_session_writes_reads_renders_and_forks(suite: Suite) -> None:
    async def session() -> None:
        async with AsyncClient(suite.registry.address, suite.modulestore.address) as gg:
            run = await gg.create_run("async", PROFILES, board=True)
            planner = await gg.open_instance(run.id, "planner")
            assert isinstance(planner, AsyncAgent)
            assert planner.history.store_id == "history-0"

            await planner.history.set_system_prompt("You plan.")
            turn = await planner.history.append("user", "Build a CLI", start_turn=True)
            assert (turn.last_seq, turn.turn) == (1, 1)
            task = await planner.tasks.create("write the parser")
            await planner.tasks.update(task, status="in_progress")
            assert await planner.board.create_issue("GG", "parser") == "GG-1"
            await planner.memories.write_pad("remember")

            tasks = await planner.tasks.contents()
            assert [(t.title, t.status) for t in tasks.tasks] == [
                ("write the parser", TaskStatus.IN_PROGRESS)]
            contributions = await planner.prompt()
            assert [c.kind for c in contributions] == list(Kind)

            copy = await planner.fork()
            assert isinstance(copy, AsyncAgent) and copy.instance.row("history").origin == Origin.FORKED
            assert (await copy.history.contents()).system_prompt is None
            assert copy.board.store_id == planner.board.store_id

            stores = await gg.list_stores(run.id, kind=Kind.HISTORY)
            assert [s.id for s in stores] == ["history-0", "history-1"]
            again = await gg.agent(run.id, planner.id)
            assert again.instance == planner.instance
            assert (await gg.get_run(run.id)).id == run.id

    asyncio.run(session())


def test_async_refusals_are_typed(suite: Suite) -> None:
    async def session() -> None:
        async with AsyncClient(suite.registry.address, suite.modulestore.address) as gg:
            run = await gg.create_run("async", PROFILES)
            history = (await gg.open_instance(run.id, "planner")).history
            await history.set_system_prompt("You plan.")
            with pytest.raises(SystemPromptAlreadySetError) as caught:
                await history.set_system_prompt("again")
            assert caught.value.reason == "SYSTEM_PROMPT_ALREADY_SET"

    asyncio.run(session())


def test_async_client_built_outside_a_loop_opens_its_channels_in_the_loop_of_its_calls(suite: Suite) -> None:
    gg = AsyncClient(suite.registry.address, suite.modulestore.address)

    async def session() -> str:
        async with gg:
            run = await gg.create_run("async", PROFILES)
            return (await gg.get_run(run.id)).name

    assert asyncio.run(session()) == "async"
