"""Server interceptor: a request id per call, one log line per call, and domain errors mapped to statuses.

Handlers raise `DomainError`; this is the only place that turns them into a gRPC status. Anything else
escaping a handler is a defect: it is logged with its traceback and answered INTERNAL.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog

from ggmodules.core.errors import DomainError
from ggmodules.runtime.errors import to_status

REQUEST_ID_HEADER = "x-request-id"


class CallInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, log: structlog.typing.FilteringBoundLogger) -> None:
        self._log = log

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return None
        method = details.method
        if method.startswith(("/grpc.health", "/grpc.reflection")):
            return handler
        meta = dict(details.invocation_metadata or ())
        call_id = str(meta.get(REQUEST_ID_HEADER) or uuid.uuid4().hex)
        log = self._log

        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                structlog.contextvars.bind_contextvars(call_id=call_id, method=method)
                started = time.perf_counter()
                try:
                    return await inner(request, context)
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    await _refuse(exc, context, log)
                finally:
                    log.debug("call", ms=round((time.perf_counter() - started) * 1000, 3))
                    structlog.contextvars.clear_contextvars()

            return grpc.unary_unary_rpc_method_handler(
                unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )

        if handler.unary_stream is not None:
            inner_stream = handler.unary_stream

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                structlog.contextvars.bind_contextvars(call_id=call_id, method=method)
                try:
                    async for item in inner_stream(request, context):
                        yield item
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    await _refuse(exc, context, log)
                finally:
                    structlog.contextvars.clear_contextvars()

            return grpc.unary_stream_rpc_method_handler(
                stream,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


async def _refuse(
    exc: Exception, context: grpc.aio.ServicerContext, log: structlog.typing.FilteringBoundLogger
) -> None:
    """Ends the call (both aborts raise): a DomainError as its status (R47), anything else as a defect."""
    if isinstance(exc, DomainError):
        log.info("refused", reason=exc.reason.value, code=exc.code.value, message=exc.message)
        await context.abort_with_status(to_status(exc))
    log.exception("defect")
    await context.abort(grpc.StatusCode.INTERNAL, "internal error; see the service log")
