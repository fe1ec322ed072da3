"""Retries as data: one gRPC service config (protos/ggmodules/service_config.json) for every client.

It retries only what is safe to resend (reads, and mutations carrying a request id), leaves the streams to
their callers' cursors, and the services' calls to each other use it too: a sibling answering UNAVAILABLE
for a moment no longer fails the caller's call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ggmodules.common.v1 import outbox_service_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2
from ggmodules.registry.v1 import registry_service_pb2
from ggmodules.runtime.channels import SERVICE_CHANNEL_OPTIONS, SERVICE_CONFIG, SERVICE_CONFIG_PATH
from ggmodules.sdk import Client, RetryPolicy, ServiceUnavailableError
from ggmodules.sdk.channels import sdk_service_config
from ggmodules.telemetry.v1 import telemetry_service_pb2
from ggmodules.transfer.v1 import transfer_service_pb2
from tests.harness import InProcessService, Suite, drop_database, new_database_url, service_config
from tests.harness.flaky import FlakyProxy
from tests.sdk.conftest import PROFILES

MODULES = [registry_service_pb2, modulestore_service_pb2, transfer_service_pb2, telemetry_service_pb2,
           outbox_service_pb2]
READS = ("Get", "List", "Inspect", "Render", "Search", "Read")


def method_config(service: str, method: str) -> dict[str, Any]:
    """The method config gRPC applies to a method: one naming the method wins over one naming its service."""
    exact = [c for c in SERVICE_CONFIG["methodConfig"] if {"service": service, "method": method} in c["name"]]
    whole = [c for c in SERVICE_CONFIG["methodConfig"] if {"service": service} in c["name"]]
    assert len(exact) + len(whole) >= 1, f"{service}/{method} has no method config"
    return (exact or whole)[0]


def every_method() -> list[tuple[str, Any]]:
    return [(s.full_name, m) for mod in MODULES for s in mod.DESCRIPTOR.services_by_name.values()
            for m in s.methods]


def test_the_service_config_sits_beside_the_protos() -> None:
    assert SERVICE_CONFIG_PATH.parts[-3:] == ("protos", "ggmodules", "service_config.json")


@pytest.mark.parametrize(("service", "method"), every_method(), ids=lambda v: getattr(v, "name", v))
def test_r49_only_reads_and_methods_carrying_a_request_id_are_retried_and_streams_are_left_to_cursors(
    service: str, method: Any
) -> None:
    config = method_config(service, method.name)
    if method.server_streaming:
        assert "retryPolicy" not in config and "timeout" not in config, method.full_name
        return
    assert config["timeout"] == "10s"
    safe = "request_id" in method.input_type.fields_by_name or method.name.startswith(READS)
    if "retryPolicy" in config:
        assert safe, f"{method.full_name} is neither a read nor carries a request_id, yet is retried"
        assert set(config["retryPolicy"]["retryableStatusCodes"]) == {"UNAVAILABLE", "ABORTED", "CANCELLED"}
    else:
        assert not safe or method.name == "AckOutbox", f"{method.full_name} could be retried but is not"


def test_the_sdk_and_the_services_channels_carry_the_config() -> None:
    assert ("grpc.service_config", __import__("json").dumps(SERVICE_CONFIG)) in SERVICE_CHANNEL_OPTIONS
    default = sdk_service_config(RetryPolicy.from_service_config())
    assert default["methodConfig"][0]["retryPolicy"] == SERVICE_CONFIG["methodConfig"][0]["retryPolicy"] | {
        "initialBackoff": "0.1s", "maxBackoff": "2.0s", "backoffMultiplier": 2.0}
    assert all("timeout" not in c for c in default["methodConfig"])  # the SDK sets each call's deadline
    assert all("retryPolicy" not in c for c in sdk_service_config(None)["methodConfig"])


def test_r49_a_sibling_call_answered_unavailable_is_retried_by_the_calling_service(
    suite: Suite, tmp_path: Any
) -> None:
    """Registry opens an instance by calling ModuleStore.BindInstance; the first two attempts meet
    UNAVAILABLE, gRPC resends the same request, and the instance opens once."""
    proxy = FlakyProxy(suite.modulestore.address, fail=2, methods=("BindInstance",))
    url = new_database_url(suite.backend, "h12c-registry", tmp_path)
    registry = InProcessService(suite.loop, replace(
        service_config("registry"), database_url=url,
        modulestore_address=proxy.address))
    try:
        with Client(registry.address, suite.modulestore.address) as gg:
            run = gg.create_run("sibling retry", PROFILES)
            planner = gg.open_instance(run.id, "planner")
            planner.tasks.create("after the retries")
            assert [i.agent_id for i in gg.iter_instances(run.id)] == ["planner-0"]
    finally:
        registry.stop()
        proxy.close()
        drop_database(url)
    binds = proxy.attempts("BindInstance")
    assert [b.answered for b in binds] == ["UNAVAILABLE", "UNAVAILABLE", "forwarded"]
    assert [b.previous_attempts for b in binds] == [0, 1, 2] and len({b.body for b in binds}) == 1


def test_r49_a_call_refused_because_a_sibling_stayed_unreachable_is_not_sent_again_by_the_client(
    suite: Suite, tmp_path: Any
) -> None:
    """Registry's channel to ModuleStore already retries UNAVAILABLE (four attempts); the OpenInstance it then
    refuses UNAVAILABLE carries a negative retry pushback, so the client's channel, whose policy retries
    UNAVAILABLE too, sends it once: one OpenInstance and four BindInstance attempts, not four and sixteen
    (each client retry retrying ModuleStore again: with Transfer over a dead Registry, 5.7 s to the answer
    instead of 1.4 s). The SDK says one attempt was made; once ModuleStore answers, the instance opens."""
    modulestore = FlakyProxy(suite.modulestore.address, fail=4, methods=("BindInstance",))
    url = new_database_url(suite.backend, "pushback-registry", tmp_path)
    registry = InProcessService(suite.loop, replace(
        service_config("registry"), database_url=url, modulestore_address=modulestore.address))
    front = FlakyProxy(registry.address, fail=0)  # forwards every attempt, and counts them
    try:
        with Client(front.address, suite.modulestore.address) as gg:
            run = gg.create_run("pushback", PROFILES)
            with pytest.raises(ServiceUnavailableError) as refused:
                gg.open_instance(run.id, "planner")
            assert refused.value.attempts == 1
            assert refused.value.metadata.get("dependency") == "ModuleStore", refused.value
            assert [a.previous_attempts for a in front.attempts("OpenInstance")] == [0]
            assert [b.answered for b in modulestore.attempts("BindInstance")] == ["UNAVAILABLE"] * 4
            opened = gg.open_instance(run.id, "planner")  # ModuleStore answers now
            assert [i.agent_id for i in gg.iter_instances(run.id)] == [opened.id]
    finally:
        front.close()
        registry.stop()
        modulestore.close()
        drop_database(url)
