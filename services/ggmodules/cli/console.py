"""`ggmodules console RUN_ID [--once] [--telemetry-address A]`: the three views of a run in the terminal.

It follows Telemetry's Subscribe stream filtered to the run, folds every event it gets (the same fold
Telemetry's Inspect RPCs use) and re-renders whenever the stream goes idle; `--once` prints the views as
soon as it has caught up, then exits. Telemetry's address: the flag, else GGMODULES_CONSOLE_TELEMETRY_ADDRESS
or GGMODULES_TELEMETRY_ADDRESS, else 127.0.0.1:50054.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

import grpc

from ggmodules.cli.console_text import render
from ggmodules.core.console import ConsoleModel
from ggmodules.runtime.channels import MESSAGE_LIMITS
from ggmodules.runtime.config import DEFAULT_PORTS
from ggmodules.sdk.config import ClientConfig
from ggmodules.sdk.credentials import bearer
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as pb_grpc
from ggmodules.wire.console import events_from

CLEAR = "\x1b[2J\x1b[H"


def telemetry_address(flag: str | None, env: Mapping[str, str]) -> str:
    default = f"127.0.0.1:{DEFAULT_PORTS['telemetry']}"
    shared = env.get("GGMODULES_TELEMETRY_ADDRESS", default)
    return flag or env.get("GGMODULES_CONSOLE_TELEMETRY_ADDRESS", shared)


def follow(
    responses: Iterable[pb.SubscribeResponse], model: ConsoleModel
) -> Iterator[ConsoleModel]:
    """Folds each event as it arrives; yields the model whenever the stream is caught up (a heartbeat)."""
    for response in responses:
        if response.WhichOneof("item") == "event":
            model.apply(events_from([response.event]))
        else:
            yield model


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="ggmodules console", description=__doc__.split("\n")[0])
    parser.add_argument("run_id")
    parser.add_argument("--once", action="store_true", help="print the views once caught up, then exit")
    parser.add_argument("--telemetry-address")
    parser.add_argument("--heartbeat-ms", type=int, default=250)
    parser.add_argument("--credential", help="an operator or the run's observer credential (default: "
                        "GGMODULES_OPERATOR_CREDENTIAL, else var/auth/operator.jwt)")
    parser.add_argument("--tls-ca-file", help="the CA of the services' certificates (default: var/tls/ca.crt "
                        "when it exists)")
    args = parser.parse_args(list(argv))
    address = telemetry_address(args.telemetry_address, os.environ)
    config = ClientConfig.from_env()
    credential = args.credential if args.credential is not None else config.operator_credential
    ca = args.tls_ca_file if args.tls_ca_file is not None else config.tls_ca_file
    tls = replace(config, tls_ca_file=ca).channel_credentials()
    options = list(MESSAGE_LIMITS)
    channel = (grpc.secure_channel(address, tls, options=options) if tls is not None
               else grpc.insecure_channel(address, options=options))
    with channel:
        stub = pb_grpc.TelemetryServiceStub(channel)
        request = pb.SubscribeRequest(run_id=args.run_id, heartbeat_ms=args.heartbeat_ms)
        stream = stub.Subscribe(request, metadata=bearer(credential))
        model, shown = ConsoleModel(), -1
        try:
            for current in follow(stream, model):
                if args.once:
                    if current.cursor == 0:
                        _say(f"run {args.run_id!r} has no telemetry at {address}")
                        return 1
                    sys.stdout.write(render(current))
                    return 0
                if current.cursor != shown:
                    shown = current.cursor
                    sys.stdout.write(CLEAR + render(current))
                    sys.stdout.flush()
        except grpc.RpcError as err:
            _say(f"Telemetry at {address}: {err.code().name}: {err.details()}")
            return 2
        except KeyboardInterrupt:
            return 0
        finally:
            stream.cancel()
    return 0


def _say(message: str) -> None:
    print(f"ggmodules console: {message}", file=sys.stderr)
