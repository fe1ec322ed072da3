"""R47, R48 fuzzed: any request to any RPC of the public contracts gets an answer or a specific refusal.

Every RPC of Registry, ModuleStore, Transfer, Telemetry and OutboxService (enumerated from the generated
descriptors, so a new RPC is covered without a line here) is sent requests generated from its message
descriptor: junk and huge strings, NUL and control characters, unicode, integers over their whole range,
unknown enum values, repeated and nested fields, mixed with the real names of seeded runs so calls get past
the first check. For each call:
- never INTERNAL or UNKNOWN (INTERNAL only as the R26 run ending, reason RUN_INTERNAL_ERROR);
- every refusal carries a google.rpc.ErrorInfo with a reason in the suite's domain;
- a refusal changes nothing: ModuleStore's outbox (where every module change lands) did not move.
Streams are read for a few items with a short deadline; DEADLINE_EXCEEDED is a valid stream waiting.

A seeded, bounded run (derandomized: the same examples every time), sized to fit the suite's time.
"""

from __future__ import annotations

import grpc
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tests.bad_input._support.requests import requests
from tests.bad_input._support.world import ERROR_DOMAIN, MAX_CREDENTIAL, World, every_method, full_name
from tests.harness import WALLET, error_info

METHODS = every_method()
BY_NAME = {f"{service}:{m.containing_service.name}.{m.name}": (service, m) for service, m in METHODS}
# Below the 16 MiB a service receives: a larger body is refused by grpc itself, before any of our code.
MAX_BODY = 4 * 1024 * 1024


@pytest.mark.parametrize("key", sorted(BY_NAME))
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
        HealthCheck.large_base_example, HealthCheck.filter_too_much,
    ],
)
@given(data=st.data())
def test_r47_r48_no_request_to_any_rpc_gets_internal_unknown_or_a_refusal_without_a_reason(
    world: World, key: str, data: st.DataObject
) -> None:
    service, method = BY_NAME[key]
    request = data.draw(requests(method.input_type, world.pools), label="request")
    assume(request.ByteSize() <= MAX_BODY)
    assume(len(WALLET.credential_for(full_name(method), request)) <= MAX_CREDENTIAL)
    before = world.outbox_head()
    code, status = world.call(service, method, request)
    event(code.name)
    info = error_info(status)
    what = f"{key} answered {code.name} ({status.message if status else 'no status'!r}) to {request!r:.600}"
    if code is grpc.StatusCode.OK or (code is grpc.StatusCode.DEADLINE_EXCEEDED and method.server_streaming):
        return
    assert code is not grpc.StatusCode.UNKNOWN, what
    r26 = info is not None and info.reason == "RUN_INTERNAL_ERROR"  # the run ended, the one INTERNAL
    assert code is not grpc.StatusCode.INTERNAL or r26, what
    assert info is not None and info.reason and info.domain == ERROR_DOMAIN, what
    if not r26:
        assert world.outbox_head() == before, f"a refusal changed ModuleStore: {what}"
