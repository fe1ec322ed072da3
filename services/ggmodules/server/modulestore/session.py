"""The write Session (ModuleStoreService/Session): an agent's writes over one stream, each answered once
durable, in the order sent.

Each message is one write, applied by the very write use case `Write` calls (`write`, passed in), so the
rules, caps, events and request ids are those of Write: a write sent again under its request id, on a
session or through Write, returns the first answer (its idempotency key is Write's). Messages are applied
one after the other, each in its own transaction, and answered only after its commit. A write refused is
answered with the status Write would have ended with (a `google.rpc.Status` in the answer) and the session
goes on; so is a message the interceptor refused before it got here (`Refused`: undecodable, a malformed
id, another run or agent than the credential's). A defect ends the stream INTERNAL, as it ends a call.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import structlog

from ggmodules.core.errors import DomainError, missing
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.runtime.errors import status_message
from ggmodules.runtime.interceptors import Refused, refusal_of

Write = Callable[[svc.WriteRequest], Awaitable[svc.WriteResponse]]
_log = structlog.get_logger("ggmodules.session")


async def answers(requests: AsyncIterator[Any], write: Write) -> AsyncIterator[svc.SessionResponse]:
    """One answer per message of `requests`, in order: the write's response, or its refusal."""
    log = _log.bind()  # resolved once per stream: the module's lazy logger resolves itself on every use
    seq = 0
    async for message in requests:
        seq += 1
        yield await _answer(message, seq, write, log)


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
