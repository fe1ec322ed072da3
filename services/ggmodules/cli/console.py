"""`ggmodules console RUN_ID [--once] [--telemetry-address A] [--token T]`: the three views of a run in the
terminal, drawn with `rich`.

It reads Telemetry's public RPCs only, so it needs nothing but a client install: Subscribe filtered to the
run says when the run changed (a heartbeat once the stream has caught up), and InspectInstances,
InspectModules and InspectAgents answer the views, which it redraws in place. `--once` prints the views as
soon as the stream has caught up, then exits. Telemetry's address: the flag, else
GGMODULES_CONSOLE_TELEMETRY_ADDRESS or GGMODULES_TELEMETRY_ADDRESS, else 127.0.0.1:50054. The credential
sent with every call (`authorization: Bearer`): `--token`, else GGMODULES_TOKEN, else the operator credential
`ggmodules up` wrote (./var/auth/operator.jwt); TLS when a CA is known (`--tls-ca-file`, else
GGMODULES_TLS_CA_FILE, else ./var/tls/ca.crt).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator, Sequence

import grpc
from rich.console import Console
from rich.live import Live

from ggmodules.cli.console_text import render
from ggmodules.runtime.channels import KEEPALIVE_OPTIONS, MESSAGE_LIMITS
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as pb_grpc
from ggmodules.web.telemetry import (
    CALL_SECONDS,
    RunViews,
    credential_metadata,
    telemetry_address,
    tls_of,
    token_of,
)

__all__ = ["caught_up", "main", "read_views", "telemetry_address"]
# Wide enough that a module's line is not folded when the output is a file or a pipe.
PIPE_WIDTH = 200


def caught_up(responses: Iterable[pb.SubscribeResponse]) -> Iterator[int]:
    """The run's newest cursor each time the stream has caught up (a heartbeat) after something new: once at
    the first heartbeat, then after each burst of events."""
    head, shown = 0, -1
    for response in responses:
        if response.WhichOneof("item") == "event":
            head = response.event.cursor
        elif head != shown:
            shown = head
            yield head


def read_views(
    stub: pb_grpc.TelemetryServiceStub, run_id: str, metadata: tuple[tuple[str, str], ...] = ()
) -> RunViews:
    def call(method: grpc.UnaryUnaryMultiCallable, request: object) -> object:
        return method(request, timeout=CALL_SECONDS, metadata=metadata)

    return RunViews(
        call(stub.InspectInstances, pb.InspectInstancesRequest(run_id=run_id)),  # type: ignore[arg-type]
        call(stub.InspectModules, pb.InspectModulesRequest(run_id=run_id)),  # type: ignore[arg-type]
        call(stub.InspectAgents, pb.InspectAgentsRequest(run_id=run_id)),  # type: ignore[arg-type]
    )


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="ggmodules console", description=__doc__.split("\n")[0])
    parser.add_argument("run_id")
    parser.add_argument("--once", action="store_true", help="print the views once caught up, then exit")
    parser.add_argument("--telemetry-address")
    parser.add_argument("--token", "--credential", dest="token",
                        help="an operator or the run's observer credential, sent as `authorization: Bearer` "
                        "(else GGMODULES_TOKEN, else GGMODULES_OPERATOR_CREDENTIAL, "
                        "else var/auth/operator.jwt)")
    parser.add_argument("--heartbeat-ms", type=int, default=250)
    parser.add_argument("--tls-ca-file", help="the CA of the services' certificates (default: var/tls/ca.crt "
                        "when it exists)")
    args = parser.parse_args(list(argv))
    address = telemetry_address(args.telemetry_address, os.environ)
    metadata = credential_metadata(token_of(args.token))
    console = Console(width=None if sys.stdout.isatty() else PIPE_WIDTH)
    tls, options = tls_of(args.tls_ca_file), [*MESSAGE_LIMITS, *KEEPALIVE_OPTIONS]
    channel = (grpc.secure_channel(address, tls, options=options) if tls is not None
               else grpc.insecure_channel(address, options=options))
    with channel:
        stub = pb_grpc.TelemetryServiceStub(channel)
        request = pb.SubscribeRequest(run_id=args.run_id, heartbeat_ms=args.heartbeat_ms)
        stream = stub.Subscribe(request, metadata=metadata)
        try:
            if args.once:
                for _ in caught_up(stream):
                    console.print(render(args.run_id, read_views(stub, args.run_id, metadata)))
                    return 0
                return 0
            with Live(console=console, auto_refresh=False, screen=console.is_terminal) as live:
                for _ in caught_up(stream):
                    live.update(render(args.run_id, read_views(stub, args.run_id, metadata)), refresh=True)
        except grpc.RpcError as err:
            code = err.code()
            _say(f"Telemetry at {address}: {code.name}: {err.details()}")
            return 1 if code == grpc.StatusCode.NOT_FOUND else 2
        except KeyboardInterrupt:
            return 0
        finally:
            stream.cancel()
    return 0


def _say(message: str) -> None:
    print(f"ggmodules console: {message}", file=sys.stderr)
