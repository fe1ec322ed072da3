"""`ggmodules web [--host H] [--port N] [--telemetry-address A] [--token T]`: the web console.

Serves the three views of every run Telemetry holds at http://H:N/ (default 127.0.0.1:50080; `--port 0`
takes a free port) and prints `ready web http://H:N` once it serves. Telemetry's address: the flag, else
GGMODULES_CONSOLE_TELEMETRY_ADDRESS or GGMODULES_TELEMETRY_ADDRESS, else 127.0.0.1:50054. The credential sent
to Telemetry with every call: `--token`, else GGMODULES_TOKEN.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import Sequence

import structlog
from aiohttp import web

from ggmodules.runtime.logging import configure_logging
from ggmodules.web.server import build_app
from ggmodules.web.telemetry import TelemetryReader, telemetry_address, token_of

DEFAULT_PORT = 50080


async def serve(host: str, port: int, telemetry: str, token: str) -> None:
    log = structlog.get_logger().bind(service="web")
    app = build_app(TelemetryReader(telemetry, token), log)
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
    parser.add_argument("--token", help="credential sent as `authorization: Bearer` (else GGMODULES_TOKEN)")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(list(argv))
    configure_logging(args.log_level)
    telemetry = telemetry_address(args.telemetry_address, os.environ)
    asyncio.run(serve(args.host, args.port, telemetry, token_of(args.token)))
    return 0
