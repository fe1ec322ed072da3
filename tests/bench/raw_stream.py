"""A bare grpc.aio server-streaming RPC, the yardstick for Telemetry's Subscribe in `make bench`.

Run as its own OS process (`python -m tests.bench.raw_stream`); it listens on port 0 and prints
`ready raw-stream <host:port>` once it serves. `/bench.RawStream/Stream` takes the count as ASCII digits and
streams that many empty messages as fast as it can: a generic handler with identity serializers, so nothing
but gRPC itself is measured.

The raw fan-out, the yardstick for one write reaching many subscribers: `/bench.RawStream/Listen` streams
an empty message once the listener is registered, then every message published; `/bench.RawStream/Publish`
hands its body to every listener's stream and answers (empty) once it has.

It serves with the services' own server options (runtime/server.py SERVER_OPTIONS): the same message limits,
and it admits the keepalive pings the bench's channels send every 4 s as the services do. With grpc's
defaults (one ping every 5 minutes) it answered them with GOAWAY "too_many_pings" after about 12 s of quiet,
which ended every Listen stream open on that connection (UNAVAILABLE "Too many pings"), seen in a `make
bench` run.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator

import grpc

from ggmodules.runtime.server import SERVER_OPTIONS

SERVICE = "bench.RawStream"
METHOD = f"/{SERVICE}/Stream"


def identity(data: bytes) -> bytes:
    return data


PLAIN = {"request_deserializer": identity, "response_serializer": identity}


async def _stream(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    for _ in range(int(request or b"0")):
        yield b""


class FanOut:
    """Server streams that each get every body handed to `deliver` (or sent to `publish`)."""

    def __init__(self) -> None:
        self.listeners: set[asyncio.Queue[bytes]] = set()

    async def listen(self, request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.listeners.add(queue)
        try:
            yield b""
            while True:
                yield await queue.get()
        finally:
            self.listeners.discard(queue)

    def deliver(self, body: bytes) -> None:
        for queue in self.listeners:
            queue.put_nowait(body)

    async def publish(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.deliver(request)
        return b""


async def serve_bytes(service: str, handlers: dict[str, grpc.RpcMethodHandler], ready: str,
                      host: str = "127.0.0.1") -> None:
    """Serves `handlers` (built with PLAIN) as `service` on port 0 with the services' server options, prints
    `ready <ready> <host:port>` once it serves, and returns once SIGTERM or SIGINT stopped it."""
    server = grpc.aio.server(options=SERVER_OPTIONS)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    port = server.add_insecure_port(f"{host}:0")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"ready {ready} {host}:{port}", flush=True)
    await stop.wait()
    await server.stop(0.5)


async def serve(host: str = "127.0.0.1") -> None:
    fan_out = FanOut()
    await serve_bytes(SERVICE, {
        "Stream": grpc.unary_stream_rpc_method_handler(_stream, **PLAIN),
        "Listen": grpc.unary_stream_rpc_method_handler(fan_out.listen, **PLAIN),
        "Publish": grpc.unary_unary_rpc_method_handler(fan_out.publish, **PLAIN),
    }, "raw-stream", host)


def stream_stub(channel: grpc.Channel) -> grpc.UnaryStreamMultiCallable:
    """The client side: call it with the count as bytes, iterate the empty messages."""
    return channel.unary_stream(METHOD, request_serializer=identity, response_deserializer=identity)


def fan_out_stubs(
    channel: grpc.aio.Channel,
) -> tuple[grpc.aio.UnaryStreamMultiCallable, grpc.aio.UnaryUnaryMultiCallable]:
    """The client side of the raw fan-out (an asyncio channel): (Listen, Publish)."""
    plain = {"request_serializer": identity, "response_deserializer": identity}
    return (
        channel.unary_stream(f"/{SERVICE}/Listen", **plain),
        channel.unary_unary(f"/{SERVICE}/Publish", **plain),
    )


if __name__ == "__main__":
    asyncio.run(serve())
