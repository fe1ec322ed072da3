"""Deadlines, metadata, request ids and retries, as a caller of the sync and asyncio clients sees them."""

from __future__ import annotations

import asyncio
import socket

import grpc
import pytest

from ggmodules.sdk import (
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
from tests.sdk.conftest import PROFILES
from tests.sdk.interceptors import AsyncRecorder, Recorder

QUICK_RETRIES = ClientConfig(retry=RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.004,
                                               jitter=0))


def closed_address() -> str:
    """An address nothing listens on: a port the OS handed out, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


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


def test_a_tiny_deadline_fails_typed_and_is_not_retried(suite: Suite) -> None:
    recorder = Recorder()
    with Client(suite.registry.address, suite.modulestore.address, interceptors=[recorder]) as gg, \
            pytest.raises(DeadlineExceededError) as caught:
        gg.with_options(timeout=1e-6).list_runs()
    assert caught.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert len(recorder.attempts) == 1


def test_unavailable_is_retried_with_the_same_request_id_then_raised_typed() -> None:
    recorder = Recorder()
    address = closed_address()
    with Client(address, address, config=QUICK_RETRIES, interceptors=[recorder]) as gg:
        with pytest.raises(ServiceUnavailableError) as caught:
            gg.create_run("nowhere", PROFILES)
        assert caught.value.attempts == 3
        assert len(recorder.attempts) == 3
        assert len({a.request.request_id for a in recorder.attempts}) == 1
        assert len({a.metadata["x-request-id"] for a in recorder.attempts}) == 1

        with pytest.raises(ServiceUnavailableError):
            gg.get_run("run-000000000000")
        assert len(recorder.attempts) == 6


def test_unavailable_mutation_without_request_id_is_not_retried() -> None:
    recorder = Recorder()
    address = closed_address()
    with Client(address, address, config=QUICK_RETRIES, interceptors=[recorder]) as gg, \
            pytest.raises(ServiceUnavailableError) as caught:
        gg._transport.run(reg.finish_run("run-000000000000").with_request_id(""))
    assert caught.value.attempts == 1 and len(recorder.attempts) == 1


def test_async_unavailable_is_retried_and_deadline_is_typed(suite: Suite) -> None:
    async def session() -> None:
        recorder = AsyncRecorder()
        address = closed_address()
        async with AsyncClient(address, address, config=QUICK_RETRIES, interceptors=[recorder]) as down:
            with pytest.raises(ServiceUnavailableError) as caught:
                await down.create_run("nowhere", PROFILES)
        assert caught.value.attempts == 3 and len(recorder.attempts) == 3
        assert len({a.request.request_id for a in recorder.attempts}) == 1

        async with AsyncClient(suite.registry.address, suite.modulestore.address) as gg:
            with pytest.raises(DeadlineExceededError):
                await gg.with_options(timeout=1e-6).list_runs()

    asyncio.run(session())
