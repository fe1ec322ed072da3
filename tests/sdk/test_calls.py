"""Deadlines, metadata, request ids and retries, as a caller of the sync and asyncio clients sees them.

Retries are gRPC's, by the service config (protos/ggmodules/service_config.json); a fault-injecting proxy in
front of the real service shows each attempt the client made."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from dataclasses import replace

import grpc
import pytest

from ggmodules.registry.v1 import registry_service_pb2 as reg_pb2
from ggmodules.sdk import (
    NO_RETRY,
    AsyncClient,
    Client,
    ClientConfig,
    DeadlineExceededError,
    RequestIdReusedError,
    RetryPolicy,
    ServiceUnavailableError,
)
from ggmodules.sdk import modulestore_calls as ms
from ggmodules.sdk import registry_calls as reg
from ggmodules.sdk.plans import ModuleRef
from tests.harness import Suite
from tests.harness.flaky import FlakyProxy
from tests.sdk._support.interceptors import Recorder
from tests.sdk.conftest import PROFILES

QUICK_RETRIES = ClientConfig(retry=RetryPolicy(max_attempts=3, initial_backoff=0.01, max_backoff=0.04))


def closed_address() -> str:
    """An address nothing listens on: a port the OS handed out, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture()
def silent_address() -> Iterator[str]:
    """An address that takes connections and never answers: no call to it can finish before its deadline,
    however short or long, so the deadline is what ends it (a live service may answer a zero deadline
    before gRPC's own timer fires)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)  # never accepted: the kernel completes the handshake, nothing ever speaks HTTP/2
        yield f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture()
def flaky_registry(suite: Suite) -> Iterator[FlakyProxy]:
    proxy = FlakyProxy(suite.registry.address, fail=2)
    yield proxy
    proxy.close()


def test_every_call_carries_x_request_id_and_caller_metadata(suite: Suite) -> None:
    recorder = Recorder()
    with Client(suite.registry.address, suite.modulestore.address, interceptors=[recorder]) as gg:
        tagged = gg.with_options(metadata={"x-runtime": "test"})
        run = tagged.create_run("calls", PROFILES)
        tagged.get_run(run.id)
        gg.get_run(run.id)
    create, get_tagged, get_plain = recorder.attempts
    assert create.metadata["x-request-id"] == create.request.request_id != ""
    assert create.metadata["x-runtime"] == get_tagged.metadata["x-runtime"] == "test"
    assert "x-runtime" not in get_plain.metadata
    assert get_tagged.metadata["x-request-id"] != get_plain.metadata["x-request-id"]


def test_r49_a_mutation_resent_under_its_request_id_is_applied_once(gg: Client) -> None:
    run = gg.create_run("calls", PROFILES)
    planner = gg.open_instance(run.id, "planner")
    ref = ModuleRef(run.id, planner.id, planner.store_id("tasks"))
    create = ms.create_task(ref, "write the parser").with_request_id("retry-of-create-task")
    first = gg._transport.run(create)
    again = gg._transport.run(create)
    assert first == again
    tasks = planner.tasks.contents()
    assert [t.title for t in tasks.tasks] == ["write the parser"] and tasks.next_id == first + 1
    with pytest.raises(RequestIdReusedError):
        gg._transport.run(ms.create_task(ref, "another").with_request_id("retry-of-create-task"))


def test_r49_registry_mutations_resent_under_their_request_id_open_one_instance(gg: Client) -> None:
    create = reg.create_run("calls", PROFILES).with_request_id("retry-of-create-run")
    run = gg._transport.run(create)
    assert gg._transport.run(create).id == run.id
    open_planner = reg.open_instance(run.id, "planner").with_request_id("retry-of-open")
    assert gg._transport.run(open_planner) == gg._transport.run(open_planner)
    assert [i.agent_id for i in gg.list_instances(run.id)] == ["planner-0"]


def test_sdk_gives_each_mutation_its_own_request_id(gg: Client) -> None:
    run = gg.create_run("calls", PROFILES)
    planner = gg.open_instance(run.id, "planner")
    assert planner.tasks.create("a") != planner.tasks.create("a")


def test_a_deadline_that_passes_fails_typed_and_is_not_retried(silent_address: str) -> None:
    recorder = Recorder()
    with Client(silent_address, silent_address, interceptors=[recorder]) as gg, \
            pytest.raises(DeadlineExceededError) as caught:
        gg.with_options(timeout=0.05).list_runs()
    assert caught.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert [a.timeout for a in recorder.attempts] == [0.05]  # the deadline asked for, one attempt


def test_r49_unavailable_is_retried_by_grpc_resending_the_same_request_id_and_applied_once(
    suite: Suite, flaky_registry: FlakyProxy
) -> None:
    with Client(flaky_registry.address, suite.modulestore.address) as gg:
        run = gg.create_run("retried", PROFILES)
        again = gg.get_run(run.id)
    creates = flaky_registry.attempts("CreateRun")
    assert [a.answered for a in creates] == ["UNAVAILABLE", "UNAVAILABLE", "forwarded"]
    assert [a.previous_attempts for a in creates] == [0, 1, 2]  # gRPC's own retries, one call
    assert len({reg_pb2.CreateRunRequest.FromString(a.body).request_id for a in creates}) == 1
    assert len({a.body for a in creates}) == 1 and len({a.metadata["x-request-id"] for a in creates}) == 1
    assert again.id == run.id and [a.answered for a in flaky_registry.attempts("GetRun")][-1] == "forwarded"
    with Client(suite.registry.address, suite.modulestore.address) as direct:
        assert [r.id for r in direct.iter_runs() if r.name == "retried" and r.id == run.id] == [run.id]


@pytest.mark.parametrize("code", [grpc.StatusCode.ABORTED, grpc.StatusCode.CANCELLED])
def test_r49_aborted_or_cancelled_by_the_service_is_retried_and_the_write_applied_once(
    suite: Suite, code: grpc.StatusCode
) -> None:
    """ABORTED: contention, nothing applied. CANCELLED from the service, not from the caller: a replica
    stopping cancels calls it had received but not started (one write in about 3,000 of a rolling restart
    of every service failed so). Either way the SDK sends the write again with its request id."""
    proxy = FlakyProxy(suite.modulestore.address, code=code, fail=2, methods=("Write",))
    try:
        with Client(suite.registry.address, proxy.address) as gg:
            run = gg.create_run("contended", PROFILES)
            planner = gg.open_instance(run.id, "planner")
            task = planner.tasks.create("write the parser")
            tasks = planner.tasks.contents()
    finally:
        proxy.close()
    writes = proxy.attempts("Write")
    assert [a.answered for a in writes] == [code.name, code.name, "forwarded"]
    assert len({a.body for a in writes}) == 1
    assert [(t.id, t.title) for t in tasks.tasks] == [(task, "write the parser")]


def test_unavailable_past_the_policy_is_raised_typed_after_its_attempts(suite: Suite) -> None:
    proxy = FlakyProxy(suite.registry.address, fail=10)
    try:
        with Client(proxy.address, suite.modulestore.address, config=QUICK_RETRIES) as gg, \
                pytest.raises(ServiceUnavailableError) as caught:
            gg.create_run("nowhere", PROFILES)
        assert caught.value.attempts == 3
        assert [a.answered for a in proxy.attempts("CreateRun")] == ["UNAVAILABLE"] * 3
        once = replace(QUICK_RETRIES, retry=NO_RETRY)
        with Client(proxy.address, suite.modulestore.address, config=once) as gg, \
                pytest.raises(ServiceUnavailableError):
            gg.get_run("run-000000000000")
        assert len(proxy.attempts("GetRun")) == 1
    finally:
        proxy.close()


def test_unavailable_mutation_without_request_id_is_not_retried(flaky_registry: FlakyProxy) -> None:
    with Client(flaky_registry.address, closed_address()) as gg, \
            pytest.raises(ServiceUnavailableError) as caught:
        gg._transport.run(reg.finish_run("run-000000000000").with_request_id(""))
    assert caught.value.attempts == 1 and len(flaky_registry.attempts("FinishRun")) == 1


def test_a_closed_address_is_service_unavailable() -> None:
    address = closed_address()
    with Client(address, address, config=QUICK_RETRIES) as gg, pytest.raises(ServiceUnavailableError):
        gg.list_runs()


def test_async_unavailable_is_retried_and_deadline_is_typed(
    suite: Suite, flaky_registry: FlakyProxy, silent_address: str
) -> None:
    async def session() -> None:
        async with AsyncClient(flaky_registry.address, suite.modulestore.address) as gg:
            run = await gg.create_run("async retried", PROFILES)
            assert (await gg.get_run(run.id)).id == run.id
        creates = flaky_registry.attempts("CreateRun")
        assert [a.answered for a in creates] == ["UNAVAILABLE", "UNAVAILABLE", "forwarded"]
        assert len({a.body for a in creates}) == 1

        async with AsyncClient(silent_address, silent_address) as gg:
            with pytest.raises(DeadlineExceededError):
                await gg.with_options(timeout=0.05).list_runs()

    asyncio.run(session())
