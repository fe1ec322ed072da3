"""`ggmodules web [--host H] [--port N] [--telemetry-address A] [--token T]`: the web console.

Serves the three views of every run Telemetry holds at http://H:N/ (default 127.0.0.1:50080; `--port 0`
takes a free port) and prints `ready web http://H:N` once it serves. Telemetry's address: the flag, else
GGMODULES_CONSOLE_TELEMETRY_ADDRESS or GGMODULES_TELEMETRY_ADDRESS, else 127.0.0.1:50054. The credential sent
to Telemetry with every call: `--token`, else GGMODULES_TOKEN, else the operator credential `ggmodules up`
wrote (./var/auth/operator.jwt); TLS when a CA is known (`--tls-ca-file`, else GGMODULES_TLS_CA_FILE, else
./var/tls/ca.crt when it exists).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import Sequence

import grpc
import structlog
from aiohttp import web

from ggmodules.runtime.logging import configure_logging
from ggmodules.web.server import build_app
from ggmodules.web.telemetry import TelemetryReader, telemetry_address, tls_of, token_of

DEFAULT_PORT = 50080


async def serve(host: str, port: int, telemetry: str, token: str,
                tls: grpc.ChannelCredentials | None = None) -> None:
    log = structlog.get_logger().bind(service="web")
    app = build_app(TelemetryReader(telemetry, token, tls), log)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port
    print(f"ready web http://{host}:{bound}", flush=True)
    log.info("serving", address=f"http://{host}:{bound}", telemetry=telemetry)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    log.info("stopped")


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="ggmodules web", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default=os.environ.get("GGMODULES_WEB_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GGMODULES_WEB_PORT", DEFAULT_PORT)))
    parser.add_argument("--telemetry-address")
    parser.add_argument("--token", help="credential sent as `authorization: Bearer` (else GGMODULES_TOKEN, "
                        "else var/auth/operator.jwt)")
    parser.add_argument("--tls-ca-file", help="the CA of Telemetry's certificate (default: "
                        "GGMODULES_TLS_CA_FILE, else var/tls/ca.crt when it exists)")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(list(argv))
    configure_logging(args.log_level)
    telemetry = telemetry_address(args.telemetry_address, os.environ)
    asyncio.run(serve(args.host, args.port, telemetry, token_of(args.token), tls_of(args.tls_ca_file)))
    return 0
