"""R47: a request body that does not decode as the RPC's request message is refused INVALID_ARGUMENT with
reason MALFORMED_REQUEST, unary and streaming alike, in every service. On main grpc's deserializer failed
before any handler and the client saw UNKNOWN ("Unexpected DecodeError")."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor, MethodDescriptor

from ggmodules.sdk.credentials import bearer
from tests.bad_input._support.world import OUTBOX, SERVICES, World
from tests.harness import CREDENTIALS, refusal_of

# (service that serves it, method): unary and streaming RPCs of every service.
RPCS: list[tuple[str, MethodDescriptor]] = [
    ("registry", SERVICES["registry"].methods_by_name["GetRun"]),
    ("registry", SERVICES["registry"].methods_by_name["CreateRun"]),
    ("modulestore", SERVICES["modulestore"].methods_by_name["Write"]),
    ("transfer", SERVICES["transfer"].methods_by_name["Exec"]),
    ("telemetry", SERVICES["telemetry"].methods_by_name["ReportTurn"]),
    ("telemetry", SERVICES["telemetry"].methods_by_name["Subscribe"]),
    ("modulestore", OUTBOX.methods_by_name["WatchOutbox"]),
]


def garbage(method: MethodDescriptor) -> dict[str, bytes]:
    """Bodies no request message decodes from: an invalid tag, a field cut short, and (when the message has a
    string field) that field holding bytes that are not UTF-8."""
    bodies = {"an invalid tag": b"\xff\xff\xff\xff", "a truncated field": b"\x0a\x05ab"}
    strings = [f for f in method.input_type.fields if f.type == FieldDescriptor.TYPE_STRING]
    if strings:
        bodies["a string that is not UTF-8"] = bytes([strings[0].number << 3 | 2, 2, 0xC3, 0x28])
    return bodies


CASES = [(service, m, name, body) for service, m in RPCS for name, body in garbage(m).items()]


@pytest.mark.parametrize(
    ("service", "method", "name", "body"), CASES, ids=[f"{m.name}-{name}" for _, m, name, _ in CASES]
)
def test_r47_an_undecodable_body_is_refused_invalid_argument_malformed_request(
    world: World, service: str, method: MethodDescriptor, name: str, body: bytes
) -> None:
    channel = world.channels[service]
    path = f"/{method.containing_service.full_name}/{method.name}"
    # A verified caller: an anonymous one is refused UNAUTHENTICATED first (test_r50_anonymous_input.py).
    credential = bearer(CREDENTIALS.operator)
    with pytest.raises(grpc.RpcError) as caught:
        if method.server_streaming:
            list(channel.unary_stream(path)(body, timeout=10, metadata=credential))
        else:
            channel.unary_unary(path)(body, timeout=10, metadata=credential)
    info = refusal_of(caught.value).info
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
    assert info is not None and info.reason == "MALFORMED_REQUEST"
    assert info.metadata["size"] == str(len(body))
