"""A fault-injecting gRPC proxy in front of a real service, to watch what a client's retries do.

The real services cannot be told to answer UNAVAILABLE or ABORTED on demand, so this proxy (a gRPC server
on loopback, forwarding raw bytes to the real one) answers the first `fail` attempts of each call (told
apart by their `x-request-id`) with `code` itself, then forwards, and records every attempt it saw: what
the client sent, not what it meant to send.
"""

from __future__ import annotations

from collections import Counter
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc

from ggmodules.runtime.channels import MESSAGE_LIMITS, PUSHBACK, SERVER_KEEPALIVE_OPTIONS

# Headers gRPC sets itself; everything else the client sent is forwarded.
_TRANSPORT_HEADERS = {":authority", "user-agent", "grpc-previous-rpc-attempts", "grpc-accept-encoding",
                      "grpc-timeout", "te", "content-type"}


@dataclass
class Seen:
    method: str
    metadata: dict[str, str]
    body: bytes
    answered: str  # the code the proxy answered this attempt with ("forwarded" when it did not)

    @property
    def previous_attempts(self) -> int:
        return int(self.metadata.get("grpc-previous-rpc-attempts", "0"))


class FlakyProxy:
    def __init__(self, target: str, *, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE, fail: int = 2,
                 methods: tuple[str, ...] = ()) -> None:
        """`methods`: the method names (e.g. "CreateRun") whose attempts fail; empty: every method.
        `pushback` (set it any time): a `grpc-retry-pushback-ms` the failed attempts carry ("" none)."""
        self.code, self.fail, self.methods = code, fail, methods
        self.pushback = ""
        self.seen: list[Seen] = []
        self._failed: Counter[str] = Counter()
        self._upstream = grpc.insecure_channel(target, options=list(MESSAGE_LIMITS))
        # Admitting the clients' keepalive pings as a service does: with grpc's defaults it would end a
        # connection quiet for about 12 s with GOAWAY "too_many_pings", an UNAVAILABLE of its own.
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8),
                                   options=[*MESSAGE_LIMITS, *SERVER_KEEPALIVE_OPTIONS])
        self._server.add_generic_rpc_handlers([_Handler(self)])
        self.address = f"127.0.0.1:{self._server.add_insecure_port('127.0.0.1:0')}"
        self._server.start()

    def attempts(self, method: str) -> list[Seen]:
        return [s for s in self.seen if s.method.rsplit("/", 1)[-1] == method]

    def _call(self, method: str, body: bytes, context: grpc.ServicerContext) -> bytes:
        metadata = dict(context.invocation_metadata())
        key = metadata.get("x-request-id", "")
        name = method.rsplit("/", 1)[-1]
        if (not self.methods or name in self.methods) and self._failed[key] < self.fail:
            self._failed[key] += 1
            self.seen.append(Seen(method, metadata, body, self.code.name))
            if self.pushback:
                context.set_trailing_metadata(((PUSHBACK, self.pushback),))
            context.abort(self.code, f"injected by the test proxy ({self._failed[key]} of {self.fail})")
        self.seen.append(Seen(method, metadata, body, "forwarded"))
        forwarded = [(k, v) for k, v in metadata.items() if k not in _TRANSPORT_HEADERS]
        left = context.time_remaining()  # a call without a deadline reads as a practically endless one
        timeout = left if left is not None and left < 3600 else None
        try:
            answer: bytes = self._upstream.unary_unary(method)(body, metadata=forwarded, timeout=timeout)
            return answer
        except grpc.RpcError as err:
            context.set_trailing_metadata(err.trailing_metadata() or ())
            context.abort(err.code(), err.details() or "")
            raise

    def close(self) -> None:
        self._server.stop(0)
        self._upstream.close()


class _Handler(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self, proxy: FlakyProxy) -> None:
        self._proxy = proxy

    def service(self, details: Any) -> Any:
        method = details.method
        return grpc.unary_unary_rpc_method_handler(
            lambda body, context: self._proxy._call(method, body, context))
