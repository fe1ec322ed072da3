"""A service's calls to another (runtime/dependency.py): one call meeting UNAVAILABLE does not cancel the
others in flight on the same channel.

The dependency here is a bare gRPC server on loopback standing in for Registry's internal surface: it holds
PlanSuccessor until the test lets it answer, and answers ReserveSuccessor UNAVAILABLE, as a Registry replica
that is restarting does. That is the shape of the defect a rolling restart of Registry showed: a Transfer
replica driving two Execs at once, one Exec's Registry call met UNAVAILABLE and its Dependency closed the
channel at once, which cancelled the other's call; that Exec was never answered and its client waited out
its deadline (3 to 9 Execs of about 1,000 in a minute of restarts).
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
import structlog

from ggmodules.core.errors import Unavailable
from ggmodules.internal.v1 import registry_internal_service_pb2 as internal
from ggmodules.internal.v1 import registry_internal_service_pb2_grpc as reg_internal
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.runtime.dependency import Dependency

SERVICE = "ggmodules.internal.v1.RegistryInternalService"


async def _registry_restarting(arrived: asyncio.Event, release: asyncio.Event) -> tuple[grpc.aio.Server, int]:
    async def plan(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        arrived.set()
        await release.wait()
        return internal.PlanSuccessorResponse(successor_agent_id="worker-1").SerializeToString()

    async def reserve(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        await context.abort(grpc.StatusCode.UNAVAILABLE, "restarting")
        raise AssertionError("abort raises")

    handler = grpc.method_handlers_generic_handler(SERVICE, {
        "PlanSuccessor": grpc.unary_unary_rpc_method_handler(plan),
        "ReserveSuccessor": grpc.unary_unary_rpc_method_handler(reserve),
    })
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


@pytest.mark.parametrize("address", ["one", "several"])
def test_a_call_meeting_unavailable_leaves_the_other_calls_on_its_channel_to_finish(address: str) -> None:
    async def scenario() -> internal.PlanSuccessorResponse:
        arrived, release = asyncio.Event(), asyncio.Event()
        server, port = await _registry_restarting(arrived, release)
        target = f"127.0.0.1:{port}" if address == "one" else f"127.0.0.1:{port},127.0.0.1:{port}"
        registry = Dependency(
            "Registry", target, reg_internal.RegistryInternalServiceStub, structlog.get_logger(), "retry"
        )
        try:
            in_flight = asyncio.ensure_future(registry.call("PlanSuccessor", internal.PlanSuccessorRequest()))
            await arrived.wait()
            with pytest.raises(Unavailable):
                await registry.call("ReserveSuccessor", reg.ReserveSuccessorRequest(request_id="r"))
            release.set()
            answer: internal.PlanSuccessorResponse = await asyncio.wait_for(in_flight, 10)
            return answer
        finally:
            await registry.close()
            await server.stop(None)

    assert asyncio.run(scenario()).successor_agent_id == "worker-1"
