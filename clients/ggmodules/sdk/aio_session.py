"""A write session (asyncio): an agent's writes over one ModuleStore `Session` stream.

    async with agent.session() as s:
        await s.history.append("user", "Build a CLI")    # returns once the write is durable
        task = await s.tasks.create("write the parser")
        # Pipelined: sent one after the other without waiting, each awaited once durable, in the order sent.
        results = await asyncio.gather(*(s.history.append("assistant", part) for part in parts))

The same as `ggmodules.sdk.session` for asyncio: the agent (handles, reads, tools) with its writes on one
stream. Writes started together (`asyncio.gather`, tasks) are sent in the order they start, without waiting
for each other, and each awaits its own acknowledgement. Leaving the block waits for every write sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import grpc
from grpc_status import rpc_status

from ggmodules.sdk.agent import AsyncAgent, AsyncWriteSession
from ggmodules.sdk.bound import Transport
from ggmodules.sdk.config import ClientConfig
from ggmodules.sdk.errors import GGModulesError, error_from_status
from ggmodules.sdk.plans import Plan
from ggmodules.sdk.results import Instance
from ggmodules.sdk.session_calls import ended_early, message, on_session, outcome, reconnects

T = TypeVar("T")


class UnaryTransport(Transport, Protocol):
    """The transport a session's other calls go on (ggmodules.sdk.aio_transport.AsyncTransport), which
    opens the stream; a Protocol so this module need not import the transport that imports it."""

    def open_session(self, run_id: str, agent_id: str) -> Any: ...

    def agent(self, instance: Instance) -> AsyncAgent: ...

    def session(self, instance: Instance) -> AsyncWriteSession: ...

    def derive(self, config: ClientConfig) -> UnaryTransport: ...

# What writing to a stream that broke raises (the reader then learns why, and opens another).
_BROKEN = (grpc.aio.AioRpcError, asyncio.InvalidStateError, grpc.aio.UsageError)


@dataclass(eq=False)
class _Sent:
    plan: Plan[Any]
    future: asyncio.Future[Any]
    generation: int = 0  # the session (1, 2, ... after breaks) it was last written on; 0: not yet
    error: GGModulesError | None = field(default=None)


class _Writes:
    """The stream: each write written in the order it started, answers read back in order by whoever awaits
    one. After a break (UNAVAILABLE) a new session is opened and every write not yet answered is written
    again on it, in order, under its request id."""

    def __init__(self, transport: UnaryTransport, run_id: str, agent_id: str) -> None:
        self._transport, self._run_id, self._agent_id = transport, run_id, agent_id
        self._call: Any = None
        self._generation = 0
        self._pending: deque[_Sent] = deque()
        self._write_lock, self._read_lock = asyncio.Lock(), asyncio.Lock()
        self._broken: GGModulesError | None = None
        self._closed = False
        self._pauses: Iterator[float] | None = None

    @property
    def config(self) -> ClientConfig:
        return self._transport.config

    def _open(self) -> None:
        self._call = self._transport.open_session(self._run_id, self._agent_id)
        self._generation += 1

    def request(self, plan: Plan[T]) -> Awaitable[T]:
        """Queues the write at once (the order of calls is the order of writes on the stream) and returns
        what awaits its acknowledgement; the write goes out when that, or any later write, is awaited, or
        when the session closes."""
        if self._broken is not None:
            raise self._broken
        if self._closed:
            raise RuntimeError("the write session is closed; open another with agent.session()")
        sent = _Sent(plan, asyncio.get_running_loop().create_future())
        self._pending.append(sent)
        return self._acknowledged(sent)

    async def _acknowledged(self, sent: _Sent) -> Any:
        await self._flush()
        async with self._read_lock:
            while not sent.future.done():
                await self._read_one()
        return sent.future.result()

    async def _flush(self) -> None:
        """Writes, in order, every queued write not yet written on the current stream."""
        async with self._write_lock:
            if self._call is None:
                self._open()
            for sent in list(self._pending):
                if sent.generation == self._generation or sent.future.done():
                    continue
                sent.generation = self._generation
                with contextlib.suppress(*_BROKEN):  # the stream broke: the reader finds out, opens another
                    await self._call.write(message(sent.plan))

    async def _read_one(self) -> None:
        try:
            answer = await self._call.read()
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.UNAVAILABLE and await self._reopen():
                return
            self._break(await _typed(self._call, err))
            return
        if answer is grpc.aio.EOF:
            self._break(ended_early())
            return
        self._pauses = None
        sent = self._pending.popleft()
        value, error = outcome(sent.plan, answer)
        if error is not None:
            sent.future.set_exception(error)
        else:
            sent.future.set_result(value)

    async def _reopen(self) -> bool:
        if self._pauses is None:
            self._pauses = reconnects(self.config)
        pause = next(self._pauses, None)
        if pause is None:
            return False
        await asyncio.sleep(pause)
        async with self._write_lock:
            self._open()
        await self._flush()
        if self._closed:
            async with self._write_lock:
                await self._done_writing()
        return True

    def _break(self, error: GGModulesError) -> None:
        self._broken = error
        while self._pending:
            sent = self._pending.popleft()
            if not sent.future.done():
                sent.future.set_exception(error)

    async def _done_writing(self) -> None:
        with contextlib.suppress(*_BROKEN):
            await self._call.done_writing()

    async def close(self) -> None:
        """Writes what is queued, half-closes the stream and waits for every answer."""
        if self._closed:
            return
        self._closed = True
        if self._call is None and not self._pending:
            return
        await self._flush()
        async with self._write_lock:
            await self._done_writing()
        async with self._read_lock:
            while self._pending:
                await self._read_one()
            if self._broken is None:
                with contextlib.suppress(*_BROKEN):
                    await self._call.code()  # the stream's end: the service is done with it

    def abort(self) -> None:
        self._closed = True
        if self._call is not None:
            self._call.cancel()
        self._break(error_from_status(grpc.StatusCode.CANCELLED, "the write session was cancelled", None))


async def _typed(call: Any, err: grpc.aio.AioRpcError) -> GGModulesError:
    try:
        status = await rpc_status.aio.from_call(call)
    except ValueError:
        status = None
    return error_from_status(err.code(), err.details() or "", status)


class AsyncSessionTransport:
    """The agent's transport with its writes sent on the session; everything else on the unary transport."""

    def __init__(self, base: UnaryTransport, writes: _Writes) -> None:
        self.base, self.writes = base, writes
        self.wallet = base.wallet

    @property
    def config(self) -> ClientConfig:
        return self.base.config

    def run(self, plan: Plan[T]) -> Any:
        return self.writes.request(plan) if on_session(plan) else self.base.run(plan)

    def agent(self, instance: Instance) -> AsyncAgent:
        return self.base.agent(instance)

    def session(self, instance: Instance) -> AsyncWriteSession:
        return self.base.session(instance)

    def derive(self, config: ClientConfig) -> AsyncSessionTransport:
        return AsyncSessionTransport(self.base.derive(config), self.writes)


def open_session(transport: UnaryTransport, instance: Instance) -> AsyncWriteSession:
    """The agent `instance` with its writes on a new session over `transport`."""
    writes = _Writes(transport, instance.run_id, instance.agent_id)
    return AsyncWriteSession(AsyncSessionTransport(transport, writes), instance)
