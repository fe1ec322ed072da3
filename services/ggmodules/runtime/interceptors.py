"""Server interceptor: a request id per call, one log line per call, and domain errors mapped to statuses.

Handlers raise `DomainError`; this is the only place that turns them into a gRPC status. Anything else
escaping a handler is a defect: it is logged with its traceback and answered INTERNAL.

It is also where every service meets its input and output as bytes, so three guards live here, the same
for unary, server-streaming and bidirectional RPCs:
- a body that does not decode as the request message is refused INVALID_ARGUMENT (MALFORMED_REQUEST)
  instead of grpc's UNKNOWN: the deserializer hands the handler a marker rather than raising;
- every id in the request is checked (`ggmodules.wire.ids`) before the handler runs, so before any SQL;
- an answer larger than a message may carry is refused RESOURCE_EXHAUSTED (TOO_LARGE) with a reason,
  instead of failing inside grpc with none: the wrapper serializes the answer itself and measures it.

With a `Guard` (runtime/auth.py, auth on) each call's credential is verified before anything else is looked
at (an anonymous caller gets UNAUTHENTICATED, never a verdict on its input), then the input is checked,
then the credential against its RPC's rule; the verified caller is bound for the handler
(`current_principal()`). It is done here rather than in a second interceptor so a call is wrapped once and
refused through one mapping.

A bidirectional stream (ModuleStore's write Session) is checked in two steps: its credential when it opens
(a refusal ends the stream with its status), then each message as it arrives, decoded, its ids checked and
held to the credential (`Guard.check_message`). A message refused there reaches the handler as `Refused`,
which answers it in its place: one bad message does not end the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import structlog

from ggmodules.core.errors import DomainError, InvalidArgument, Reason, ResourceExhausted, Unavailable
from ggmodules.runtime.auth import Guard, Rule, bind_principal, unbind_principal
from ggmodules.runtime.credentials import Principal
from ggmodules.runtime.errors import to_status
from ggmodules.storage.contention import database_unreachable, first_line
from ggmodules.wire.ids import check_ids

REQUEST_ID_HEADER = "x-request-id"
# A call without an x-request-id header is logged under this process's prefix and a counter: unique like a
# uuid4, without a system call for randomness on every call.
_CALL_PREFIX = uuid.uuid4().hex[:16]
_CALLS = itertools.count(1)
Serialize = Callable[[Any], bytes]
Deserialize = Callable[[bytes], Any]


@dataclass(frozen=True, slots=True)
class Undecodable:
    """What the deserializer hands on for a body that does not decode: the handler refuses it."""

    size: int
    error: str


_STOPPING = (
    "this replica is stopping; resume the stream after the last cursor (or origin_seq) you received, on "
    "another replica or once this one is back"
)


class _Stream:
    """A server stream being served: its task, and whether it waits on its next item (or hands one over)."""

    __slots__ = ("task", "waiting")

    def __init__(self, task: asyncio.Task[Any] | None) -> None:
        assert task is not None  # grpc.aio serves each call in a task of its own
        self.task = task
        self.waiting = False


class CallInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Wraps each method's handler once (the first call of the method builds the wrapper, every later call
    is handed the same one): what differs between calls, their metadata, is read from the call's context."""

    def __init__(
        self, log: structlog.typing.FilteringBoundLogger, max_response_bytes: int, guard: Guard | None = None
    ) -> None:
        self._log = log
        self._max_response_bytes = max_response_bytes
        self._guard = guard
        # method -> (the handler it was served by, the wrapped handler)
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}
        # The tasks serving server streams (Subscribe, WatchOutbox): `end_streams` ends them when the server
        # stops.
        self._streams: set[_Stream] = set()
        self._stopping = False

    def end_streams(self) -> None:
        """Ends every server stream at once, UNAVAILABLE, and refuses new ones. A
        stopping server otherwise kept them to the end of its grace (grpc ends them only then): every stop
        of a replica with a Telemetry relay following it took the whole grace (5.2-5.7 s of each stop of
        ModuleStore and Registry in a rolling restart), and its subscribers and relays stayed on a replica
        that was going away. Their callers resume after their last cursor, on another replica: the SDK's
        subscriptions and Telemetry's relays resume on UNAVAILABLE. Write sessions are left to the grace:
        a write in flight is answered."""
        self._stopping = True
        for stream in self._streams:
            if stream.waiting:  # on the stream's own next item: ended there (`stream` below)
                stream.task.cancel()
            # else it is handing an item to grpc, and ends itself once that returns: a cancellation there
            # is taken by grpc for the caller's, and the call was then never answered

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return None
        method = details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = handler
        if not method.startswith(("/grpc.health", "/grpc.reflection")):
            wrapped = self._wrap(method, handler)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        log = self._log
        decode = _decoder(handler.request_deserializer)
        encode = _encoder(handler.response_serializer, method, self._max_response_bytes)
        guard = self._guard
        rule = guard.rule(method) if guard is not None else None

        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                meta = dict(context.invocation_metadata() or ())
                bound = _bind_call(meta, method)
                started = time.perf_counter()
                token = None
                try:
                    token = _check(guard, method, rule, meta, request)
                    return encode(await inner(request, context))
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    await _refuse(exc, context, log)
                finally:
                    if token is not None:
                        unbind_principal(token)
                    log.debug("call", ms=round((time.perf_counter() - started) * 1000, 3))
                    _unbind_call(bound)

            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=decode, response_serializer=_as_is
            )

        if handler.unary_stream is not None:
            inner_stream = handler.unary_stream
            streams = self._streams

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                meta = dict(context.invocation_metadata() or ())
                bound = _bind_call(meta, method)
                token = None
                this = _Stream(asyncio.current_task())
                streams.add(this)
                try:
                    token = _check(guard, method, rule, meta, request)
                    items = inner_stream(request, context).__aiter__()
                    while not self._stopping:
                        this.waiting = True
                        try:
                            item = await items.__anext__()
                        except StopAsyncIteration:
                            return
                        finally:
                            this.waiting = False
                        yield encode(item)
                    raise Unavailable(_STOPPING)
                except grpc.aio.AbortError:
                    raise
                except asyncio.CancelledError:
                    if not self._stopping:  # the caller went away
                        raise
                    this.task.uncancel()  # ended by end_streams: answered, so the caller resumes elsewhere
                    await _refuse(Unavailable(_STOPPING), context, log)
                except Exception as exc:
                    await _refuse(exc, context, log)
                finally:
                    streams.discard(this)
                    if token is not None:
                        unbind_principal(token)
                    _unbind_call(bound)

            return grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=decode, response_serializer=_as_is
            )
        if handler.stream_stream is not None:
            inner_bidi = handler.stream_stream

            async def bidi(
                requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
            ) -> AsyncIterator[Any]:
                meta = dict(context.invocation_metadata() or ())
                bound = _bind_call(meta, method)
                token = None
                try:
                    who = None
                    if guard is not None:
                        assert rule is not None
                        who = guard.open(method, rule, meta)
                        token = bind_principal(who)
                    async for item in inner_bidi(_screened(requests, guard, rule, who), context):
                        yield encode(item)
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    await _refuse(exc, context, log)
                finally:
                    if token is not None:
                        unbind_principal(token)
                    _unbind_call(bound)

            return grpc.stream_stream_rpc_method_handler(
                bidi, request_deserializer=decode, response_serializer=_as_is
            )
        return handler


def _bind_call(meta: dict[str, Any], method: str) -> Any:
    """Binds the call's request id and method for every log line of the call (structlog contextvars)."""
    call_id = meta.get(REQUEST_ID_HEADER) or f"{_CALL_PREFIX}{next(_CALLS):08x}"
    return structlog.contextvars.bind_contextvars(call_id=str(call_id), method=method)


def _unbind_call(bound: Any) -> None:
    # A stream's last step may run in another context; that context ends with the call anyway.
    with contextlib.suppress(ValueError):
        structlog.contextvars.reset_contextvars(**bound)


@dataclass(frozen=True, slots=True)
class Refused:
    """A message of a client stream refused before its handler saw it (it did not decode, an id in it is
    malformed, or it names another run or agent than the stream's credential). The handler receives this in
    the message's place and answers it with the refusal; the stream goes on."""

    request: Any  # the decoded message; None when it did not decode
    error: DomainError


async def _screened(
    requests: AsyncIterator[Any], guard: Guard | None, rule: Rule | None, who: Principal | None
) -> AsyncIterator[Any]:
    """A client stream's messages, each held to what a unary request is held to before its handler runs."""
    async for request in requests:
        try:
            _admit(request)
            if guard is not None and rule is not None and who is not None:
                guard.check_message(rule, who, request)
        except DomainError as exc:
            yield Refused(None if isinstance(request, Undecodable) else request, exc)
        else:
            yield request


def _check(guard: Guard | None, method: str, rule: Rule | None, meta: dict[str, Any], request: Any) -> Any:
    """Who is calling first, then what they sent, then whether this caller may send it: a caller without a
    valid credential learns nothing about its request (not even which field is malformed) before it is
    refused UNAUTHENTICATED. Returns the token binding the verified caller (None without auth)."""
    if guard is None:
        _admit(request)
        return None
    assert rule is not None
    who = guard.principal(meta)
    _admit(request)
    return bind_principal(guard.admit(method, rule, who, request))


def _decoder(deserialize: Deserialize | None) -> Deserialize:
    def decode(data: bytes) -> Any:
        if deserialize is None:
            return data
        try:
            return deserialize(data)
        except Exception as exc:  # DecodeError, and whatever else a parser of untrusted bytes raises
            return Undecodable(len(data), type(exc).__name__)

    return decode


def _encoder(serialize: Serialize | None, method: str, limit: int) -> Serialize:
    def encode(response: Any) -> bytes:
        # Bytes are an answer the handler encoded itself (Telemetry's Subscribe: once for every subscriber).
        data: bytes = response if serialize is None or isinstance(response, bytes) else serialize(response)
        if len(data) > limit:
            raise ResourceExhausted(
                f"the answer to {method.rsplit('/', 1)[-1]} would be {len(data):,} bytes, over the "
                f"{limit:,} bytes one message may carry; ask for less (a smaller page_size, or page "
                "from after_seq) or keep the store smaller",
                reason=Reason.TOO_LARGE,
                metadata={"method": method, "size": str(len(data)), "limit": str(limit)},
            )
        return data

    return encode


def _as_is(data: bytes) -> bytes:
    return data


def _admit(request: Any) -> None:
    """Refuses, before the handler runs, a body that did not decode and any malformed id."""
    if isinstance(request, Undecodable):
        raise InvalidArgument(
            f"the request body ({request.size} bytes) is not a valid encoding of this RPC's request "
            f"message ({request.error}); send the message the RPC's contract names",
            reason=Reason.MALFORMED_REQUEST,
            metadata={"size": str(request.size), "error": request.error},
        )
    check_ids(request)


def refusal_of(exc: Exception, log: structlog.typing.FilteringBoundLogger) -> DomainError | None:
    """What a caller is told of `exc`: a DomainError as it is, a database that cannot be reached or refuses
    a connection (down, restarting, `too many clients`), or ended this session's transaction left idle too
    long (storage/engine.py IDLE_IN_TRANSACTION_MS: the replica had stalled), as UNAVAILABLE, which the
    service config retries; None for anything else (a defect).

    A connection lost during COMMIT (storage/contention.py `database_unreachable`, the driver's own error)
    leaves the write's fate unknown to the service; the retry with the same request id that UNAVAILABLE
    invites answers it either way (R49: the first answer if it committed, the write applied once if not)."""
    if database_unreachable(exc):
        first = first_line(exc)
        log.warning("database unavailable", error=first)
        return Unavailable(
            f"the database did not answer or refused a connection ({first}); retry with the same request_id",
            metadata={"dependency": "database"},
        )
    return exc if isinstance(exc, DomainError) else None


async def _refuse(
    exc: Exception, context: grpc.aio.ServicerContext, log: structlog.typing.FilteringBoundLogger
) -> None:
    """Ends the call (both aborts raise): a refusal (`refusal_of`) as its status (R47); anything else as a
    defect."""
    exc = refusal_of(exc, log) or exc
    if isinstance(exc, DomainError):
        log.info("refused", reason=exc.reason.value, code=exc.code.value, message=exc.message[:500])
        await context.abort_with_status(to_status(exc))
    log.exception("defect")
    await context.abort(grpc.StatusCode.INTERNAL, "internal error; see the service log")
