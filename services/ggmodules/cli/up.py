"""`ggmodules up`: every service in its own OS process, on its default port and the embedded SQLite default,
then the web console (`ggmodules web`, http on 127.0.0.1:50080 unless GGMODULES_WEB_PORT says otherwise).

Starts the services in dependency order, waits for each one's `ready` line, prints the addresses and a hint,
and on Ctrl-C (or SIGTERM) stops them all gracefully, in reverse order.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ggmodules.cli.dev_keys import ensure_dev_keys
from ggmodules.cli.web import DEFAULT_PORT as WEB_PORT
from ggmodules.runtime.config import DEFAULT_PORTS
from ggmodules.runtime.security import INSECURE_WARNING

# In start order: a service may call the ones before it; the web console reads Telemetry.
ORDER = ("modulestore", "registry", "transfer", "telemetry", "web")
# The four services (each with its own metrics port under --metrics-port), without the web console.
SERVICES = ORDER[:4]


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[str]
    address: str = ""


def _port(name: str, env: dict[str, str]) -> int:
    if name == "web":
        return int(env.get("GGMODULES_WEB_PORT", WEB_PORT))
    return DEFAULT_PORTS[name]


def _start(name: str, port: int, env: dict[str, str]) -> Child:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ggmodules.cli.main", name, "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # Ctrl-C reaches `up`, which stops the children in order
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(f"ready {name} "):
        proc.wait(10)
        raise RuntimeError(f"{name} exited before serving (exit code {proc.returncode}); see its log above")
    # Keep draining stdout so the child never blocks on a full pipe.
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return Child(name, proc, line.split()[2])


def up(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="ggmodules up", description=__doc__)
    parser.add_argument("--database-url", help="one database for every service (default: a SQLite file each)")
    parser.add_argument("--insecure-dev", action="store_true",
                        help="no credentials and no TLS: for local experiments only")
    parser.add_argument(
        "--event-log",
        help="Telemetry's event log: nats://host:port for NATS JetStream, which ModuleStore then publishes "
        "its own events to (default: SQL table)",
    )
    parser.add_argument("--trace", help="turn tracing on in every service: console or otlp (default: off)")
    parser.add_argument(
        "--metrics-port", type=int,
        help=f"serve Prometheus /metrics: {SERVICES[0]} on this port, the others on the next ones, in the "
        f"order {', '.join(SERVICES)} (default: off)",
    )
    args = parser.parse_args(list(argv))
    env = dict(os.environ)
    if args.insecure_dev:
        env["GGMODULES_INSECURE_DEV"] = "1"
        env["GGMODULES_TLS_CA_FILE"] = ""  # the web console: plaintext even where ./var/tls exists
        print(f"ggmodules: {INSECURE_WARNING}", file=sys.stderr, flush=True)
    else:
        for path in ensure_dev_keys(Path("var")):
            print(f"ggmodules: made {path}", flush=True)
    if args.database_url:
        env["GGMODULES_DATABASE_URL"] = args.database_url
    if args.event_log:
        env["GGMODULES_TELEMETRY_EVENT_LOG"] = args.event_log
        env["GGMODULES_MODULESTORE_EVENT_LOG"] = args.event_log  # one hop shorter (runtime/origin_relay.py)
    if args.trace:
        env["GGMODULES_TRACE"] = args.trace
    if args.metrics_port is not None:
        for offset, name in enumerate(SERVICES):
            env[f"GGMODULES_{name.upper()}_METRICS_PORT"] = str(args.metrics_port + offset)
    for name in DEFAULT_PORTS:
        env.setdefault(f"GGMODULES_{name.upper()}_ADDRESS", f"127.0.0.1:{DEFAULT_PORTS[name]}")

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    children: list[Child] = []
    try:
        for name in ORDER:
            if stop.is_set():
                break
            children.append(_start(name, _port(name, env), env))
        if not stop.is_set():
            print("ggmodules is up:")
            for child in children:
                label = "console" if child.name == "web" else child.name
                print(f"  {label:<12} {child.address}")
            if args.metrics_port is not None:
                ports = ", ".join(f"{n} {args.metrics_port + i}" for i, n in enumerate(SERVICES))
                print(f"  metrics on http://127.0.0.1:PORT/metrics: {ports}")
            if not args.insecure_dev:
                print(
                    "Auth and TLS are on. The SDK and both consoles read var/auth/operator.jwt and\n"
                    "var/tls/ca.crt "
                    "from this directory; elsewhere set GGMODULES_OPERATOR_CREDENTIAL_FILE and\n"
                    "GGMODULES_TLS_CA_FILE (grpcurl: -cacert var/tls/ca.crt -H \"authorization: Bearer $(cat "
                    "var/auth/operator.jwt)\").",
                    flush=True,
                )
            print(
                "Try it: README.md has an SDK session to paste. Watch its run in the web console:\n"
                f"  {children[-1].address}\n"
                "or in the terminal: .venv/bin/ggmodules console RUN_ID  (live; --once prints and exits)\n"
                "Ctrl-C stops everything.",
                flush=True,
            )
        while not stop.is_set():
            if any(c.proc.poll() is not None for c in children):
                dead = [c.name for c in children if c.proc.poll() is not None]
                print(f"ggmodules: {', '.join(dead)} exited; stopping the rest", file=sys.stderr)
                return_code = 1
                break
            stop.wait(0.5)
        else:
            return_code = 0
    except RuntimeError as err:
        print(f"ggmodules: {err}", file=sys.stderr)
        return_code = 1
    finally:
        for child in reversed(children):
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        for child in reversed(children):
            try:
                child.proc.wait(15)
            except subprocess.TimeoutExpired:
                child.proc.kill()
        if children:
            print("ggmodules: stopped")
    return return_code
