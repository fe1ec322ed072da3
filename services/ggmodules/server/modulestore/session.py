"""The write Session (ModuleStoreService/Session): an agent's writes over one stream, each answered once
durable, in the order sent.

Each message is one write, applied by the very write use case `Write` calls (`write`, passed in), so the
rules, caps, events and request ids are those of Write: a write sent again under its request id, on a
session or through Write, returns the first answer (its idempotency key is Write's). Writes are applied in
the order sent and each is answered only after its commit. A write refused is answered with the status
Write would have ended with (a `google.rpc.Status` in the answer) and the session goes on; so is a message
the interceptor refused before it got here (`Refused`: undecodable, a malformed id, another run or agent
than the credential's). A defect ends the stream INTERNAL, as it ends a call.

How far a session reads ahead (`ahead`):
- 0 (SQLite, where a write commits inline on the loop in a few hundred microseconds): one message at a
  time, the next read once the previous is answered; a task per message would only add to each.
- more (PostgreSQL, where a durable commit waits on the server's WAL flush): messages already sent are
  read while earlier ones commit and handed to the write at once, so the writes sent together join one
  group-commit batch (storage/modulestore/group_commit.py: one transaction, a savepoint each, one durable
  commit) instead of paying a flush each. Writes to one store keep their order there (a batch applies them
  in arrival order); a message to another store than the writes in flight waits for those to be answered
  first, so every write is applied in the order sent. At most `ahead` are in flight.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import structlog

from ggmodules.core.errors import DomainError, missing
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.runtime.errors import status_message
from ggmodules.runtime.interceptors import Refused, refusal_of

Write = Callable[[svc.WriteRequest], Awaitable[svc.WriteResponse]]
_log = structlog.get_logger("ggmodules.session")


async def answers(
    requests: AsyncIterator[Any], write: Write, ahead: int = 0
) -> AsyncIterator[svc.SessionResponse]:
    """One answer per message of `requests`, in order: the write's response, or its refusal."""
    log = _log.bind()  # resolved once per stream: the module's lazy logger resolves itself on every use
    if ahead > 0:
        async for answer in _read_ahead(requests, write, ahead, log):
            yield answer
        return
    seq = 0
    async for message in requests:
        seq += 1
        yield await _answer(message, seq, write, log)


async def _read_ahead(
    requests: AsyncIterator[Any], write: Write, ahead: int, log: structlog.typing.FilteringBoundLogger
) -> AsyncIterator[svc.SessionResponse]:
    """`answers` with up to `ahead` writes in flight (the module docstring): a reader task takes messages
    off the stream and starts each one's write; this generator yields their answers in the order sent."""
    loop = asyncio.get_running_loop()
    started: asyncio.Queue[asyncio.Task[svc.SessionResponse] | None] = asyncio.Queue()
    in_flight: deque[asyncio.Task[svc.SessionResponse]] = deque()
    room = asyncio.Semaphore(ahead)

    async def read() -> None:
        seq, store = 0, None
        try:
            async for message in requests:
                seq += 1
                target = _store_of(message)
                while in_flight and (in_flight[0].done() or (target is not None and target != store)):
                    await asyncio.wait([in_flight.popleft()])  # another store: after the writes before it
                if target is not None:
                    store = target
                await room.acquire()
                task = loop.create_task(_answer(message, seq, write, log))
                task.add_done_callback(lambda _: room.release())
                in_flight.append(task)
                started.put_nowait(task)
        finally:
            started.put_nowait(None)

    reader = loop.create_task(read())
    try:
        while (task := await started.get()) is not None:
            yield await task
        await reader  # the stream's own failure, if it ended on one
    finally:
        reader.cancel()
        for task in in_flight:  # the client left: writes started stand, their answers go nowhere
            task.cancel()


def _store_of(message: svc.SessionRequest | Refused) -> tuple[str, str] | None:
    """The store a message writes (None: it is refused before any write)."""
    if isinstance(message, Refused) or message.WhichOneof("item") != "write":
        return None
    return message.write.run_id, message.write.store_id


async def _answer(
    message: svc.SessionRequest | Refused, seq: int, write: Write, log: structlog.typing.FilteringBoundLogger
) -> svc.SessionResponse:
    if isinstance(message, Refused):
        request_id = message.request.write.request_id if message.request is not None else ""
        return _refused(request_id, seq, message.error, log)
    request = message.write
    if message.WhichOneof("item") != "write":
        return _refused("", seq, missing("write"), log)
    started = time.perf_counter()
    try:
        written = await write(request)
    except Exception as exc:
        refusal = refusal_of(exc, log)
        if refusal is None:
            raise  # a defect: the interceptor ends the stream INTERNAL and logs it
        return _refused(request.request_id, seq, refusal, log)
    finally:
        log.debug("session write", message_seq=seq, ms=round((time.perf_counter() - started) * 1000, 3))
    return svc.SessionResponse(request_id=request.request_id, message_seq=seq, written=written)


def _refused(
    request_id: str, seq: int, error: DomainError, log: structlog.typing.FilteringBoundLogger
) -> svc.SessionResponse:
    log.info("refused", reason=error.reason.value, code=error.code.value, message_seq=seq,
             message=error.message[:500])
    return svc.SessionResponse(request_id=request_id, message_seq=seq, refused=status_message(error))
