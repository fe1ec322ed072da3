"""`ggmodules`: run one service, or bring the whole suite up.

ggmodules modulestore [--port N] [--database-url URL] ...   one service, in this process
ggmodules registry    [--port N] [--modulestore-address A]  ...
ggmodules transfer    [--port N] [--registry-address A] [--modulestore-address A] ...
ggmodules telemetry   [--port N] [--modulestore-address A] [--registry-address A] ...
ggmodules up [--insecure-dev]                                every service, each its own process (auth and
                                                             TLS on, keys made under ./var/ on first start)
ggmodules migrate [SERVICE ...] [--database-url URL]        migrate the tables without starting a service
ggmodules followers [SERVICE ...] [--forget NAME]           each outbox's followers; forget a retired one
ggmodules console RUN_ID [--once] [--telemetry-address A] [--token T]   a run's three views in the terminal
ggmodules web [--port N] [--telemetry-address A] [--token T]   the web console (http), every run's views
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable, Sequence

import structlog
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.logging import configure_logging
from ggmodules.runtime.observability import Observe, install_client_tracing, tracer_provider
from ggmodules.runtime.security import SecurityConfigError
from ggmodules.runtime.server import Service, serve_forever
from ggmodules.storage.contention import first_line

# service name -> module with `build_service(config, log) -> Service`
SERVICES = {
    "modulestore": "ggmodules.server.modulestore.app",
    "registry": "ggmodules.server.registry.app",
    "transfer": "ggmodules.server.transfer.app",
    "telemetry": "ggmodules.server.telemetry.app",
}


def run_service(name: str, argv: Sequence[str], build: Callable[..., Service] | None = None) -> None:
    """Runs one service until SIGTERM. `build` replaces its module's `build_service` (a test launcher
    passes one with test-only hooks, e.g. tests/tools/crashing.py)."""
    try:
        config = ServiceConfig.load(name, argv)
    except ValueError as err:  # a number out of its range, named with its flag
        sys.exit(f"ggmodules {name}: {err}")
    configure_logging(config.log_level)
    log = structlog.get_logger().bind(service=name)
    if build is None:
        build = importlib.import_module(SERVICES[name]).build_service
    # A setting refused while the service is built (an event log URL's option, a limit, an address, a trace
    # exporter: each raises ValueError naming the setting and what to give) ends the process with that one
    # line, not a traceback; --log-level debug logs the traceback too.
    try:
        service = build(config, log)
        # Traces and metrics are off unless --trace / --metrics-port ask for them (runtime/observability.py).
        provider = tracer_provider(name, config.trace) if config.trace else None
    except (SecurityConfigError, ValueError) as err:
        log.debug("configuration refused", exc_info=True)
        sys.exit(f"ggmodules {name}: {err}")
    except OperationalError as err:  # the database did not answer the start's migration
        log.debug("database unreachable at start", exc_info=True)
        where = make_url(config.database_url).render_as_string(hide_password=True)
        cause = first_line(err)
        sys.exit(f"ggmodules {name}: the database at {where} does not answer: {cause}")
    install_client_tracing(provider)
    observe = Observe(tracer_provider=provider, metrics_port=config.metrics_port)
    try:
        asyncio.run(serve_forever(service, config.host, config.port, config.grace_seconds, log, observe))
    finally:
        if provider is not None:
            provider.shutdown()  # flushes the spans still batched


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return
    command, rest = args[0], args[1:]
    if command in SERVICES:
        run_service(command, rest)
    elif command == "console":
        from ggmodules.cli.console import main as console

        sys.exit(console(rest))
    elif command == "web":
        from ggmodules.cli.web import main as web_console

        sys.exit(web_console(rest))
    elif command == "migrate":
        from ggmodules.cli.migrate import main as migrate

        sys.exit(migrate(rest))
    elif command == "followers":
        from ggmodules.cli.followers import main as followers

        sys.exit(followers(rest))
    elif command == "up":
        from ggmodules.cli.up import up

        sys.exit(up(rest))
    else:
        sys.exit(f"ggmodules: unknown command {command!r}; try `ggmodules --help`")


if __name__ == "__main__":
    main()
