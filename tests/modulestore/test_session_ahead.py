"""How far a write Session reads ahead (server/modulestore/session.py): on PostgreSQL the writes already sent
are started while earlier ones commit, so they share a group-commit batch and its one durable commit; writes
to one store go together, a write to another store waits for those before it; answers keep the order sent.
On SQLite (ahead 0) one write at a time, as before."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ggmodules.core.errors import FailedPrecondition
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.server.modulestore.session import answers


def _message(store: str, n: int) -> svc.SessionRequest:
    return svc.SessionRequest(write=svc.WriteRequest(request_id=f"r{n}", run_id="run-1", agent_id="coder-0",
                                                     store_id=store))  # fmt: skip


class _Writes:
    """A write that waits until released, noting the request ids started and finished, in order."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, request: svc.WriteRequest) -> svc.WriteResponse:
        self.started.append(request.request_id)
        await self.release.wait()
        self.finished.append(request.request_id)
        if request.request_id == "r2":
            raise FailedPrecondition("refused r2")
        return svc.WriteResponse(store_id=request.store_id)


async def _sent(messages: list[svc.SessionRequest]) -> AsyncIterator[svc.SessionRequest]:
    for m in messages:
        yield m


async def _until(condition: object) -> None:
    for _ in range(1000):
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0)
    raise AssertionError("never came")


def test_writes_already_sent_to_one_store_are_in_flight_together_and_another_store_waits() -> None:
    async def main() -> tuple[list[str], list[svc.SessionResponse], _Writes]:
        writes = _Writes()
        sent = [_message("history-0", 1), _message("history-0", 2), _message("history-0", 3),
                _message("tasks-0", 4), _message("tasks-0", 5)]
        stream = answers(_sent(sent), writes, 64)
        first = asyncio.ensure_future(stream.__anext__())
        await _until(lambda: len(writes.started) == 3)
        for _ in range(10):
            await asyncio.sleep(0)
        in_flight = list(writes.started)  # the other store's writes have not started
        writes.release.set()
        got = [await first] + [a async for a in stream]
        return in_flight, got, writes

    in_flight, got, writes = asyncio.run(main())
    assert in_flight == ["r1", "r2", "r3"]
    assert writes.started == ["r1", "r2", "r3", "r4", "r5"]
    assert writes.finished.index("r4") > max(writes.finished.index(r) for r in ("r1", "r2", "r3"))
    assert [a.request_id for a in got] == ["r1", "r2", "r3", "r4", "r5"]
    assert [a.message_seq for a in got] == [1, 2, 3, 4, 5]
    assert [a.WhichOneof("outcome") for a in got] == ["written", "refused", "written", "written", "written"]


def test_at_most_ahead_writes_are_in_flight_and_ahead_0_is_one_at_a_time() -> None:
    async def in_flight(ahead: int) -> list[str]:
        writes = _Writes()
        stream = answers(_sent([_message("history-0", n) for n in range(3, 10)]), writes, ahead)
        first = asyncio.ensure_future(stream.__anext__())
        await _until(lambda: len(writes.started) >= 1)
        for _ in range(20):
            await asyncio.sleep(0)
        started = list(writes.started)
        writes.release.set()
        await first
        assert len([a async for a in stream]) == 6
        return started

    assert asyncio.run(in_flight(4)) == ["r3", "r4", "r5", "r6"]
    assert asyncio.run(in_flight(0)) == ["r3"]
