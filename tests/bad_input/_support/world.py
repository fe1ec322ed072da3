"""The four public services on one backend (the session's suite and its Telemetry), every RPC their
contracts declare, and a few seeded runs whose real names the fuzzer mixes into its requests."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import grpc
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message
from google.rpc import status_pb2

from ggmodules.core.kinds import KIND_WORDS
from ggmodules.internal.v1 import modulestore_internal_service_pb2 as ms_internal
from ggmodules.internal.v1 import outbox_service_pb2 as internal_outbox
from ggmodules.internal.v1 import registry_internal_service_pb2 as reg_internal
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2
from ggmodules.sdk.credentials import bearer
from ggmodules.telemetry.v1 import telemetry_service_pb2
from ggmodules.transfer.v1 import transfer_service_pb2, transfer_service_pb2_grpc
from tests.bad_input._support.requests import Pools
from tests.harness import CREDENTIALS, NONE, WALLET, Suite, rich_status, stubs
from tests.harness.registry import create_run, edge, fork, fsm, full_profile, open_instance, store_ids
from tests.harness.transfers import put_everything, transition

SERVICES = {
    "registry": registry_service_pb2.DESCRIPTOR.services_by_name["RegistryService"],
    "modulestore": svc.DESCRIPTOR.services_by_name["ModuleStoreService"],
    "transfer": transfer_service_pb2.DESCRIPTOR.services_by_name["TransferService"],
    "telemetry": telemetry_service_pb2.DESCRIPTOR.services_by_name["TelemetryService"],
}
INTERNAL = {
    "registry": reg_internal.DESCRIPTOR.services_by_name["RegistryInternalService"],
    "modulestore": ms_internal.DESCRIPTOR.services_by_name["ModuleStoreInternalService"],
}
OUTBOX = internal_outbox.DESCRIPTOR.services_by_name["OutboxService"]
ERROR_DOMAIN = "ggmodules.dev"
# The call's credential is minted for the ids in its request (WALLET.credential_for). One minted for an id far
# past the id limits would not fit in the headers a service accepts (16 KiB, runtime/channels.py: past it
# RESOURCE_EXHAUSTED from grpc, before any of our code); no credential the suite issues is that long (an id
# is at most 128 characters).
MAX_CREDENTIAL = 4096


def every_method() -> list[tuple[str, MethodDescriptor]]:
    """(service that serves it, method) for every RPC of the public contracts, read from the descriptors:
    an RPC added to a contract is fuzzed without a line here. OutboxService is served by ModuleStore and
    Registry alike."""
    found = [(name, m) for name, service in {**SERVICES}.items() for m in service.methods]
    found += [(name, m) for name, service in INTERNAL.items() for m in service.methods]
    found += [(name, m) for name in ("modulestore", "registry") for m in OUTBOX.methods]
    return found


@dataclass
class World:
    addresses: dict[str, str]
    channels: dict[str, grpc.Channel]
    pools: Pools

    @classmethod
    def seed(cls, suite: Suite, runs: int = 3) -> World:
        addresses = {
            "registry": suite.registry.address,
            "modulestore": suite.modulestore.address,
            "transfer": suite.transfer.address,
            "telemetry": suite.telemetry.address,
        }
        seeding = {name: suite.channel(address) for name, address in addresses.items()}
        # Fuzzed calls are raw bytes: each carries the credential its decoded request would (see call).
        channels = {name: suite.channel(address, NONE) for name, address in addresses.items()}
        registry = stubs(seeding["registry"], "registry")
        modulestore = stubs(seeding["modulestore"], "modulestore")
        transfer = transfer_service_pb2_grpc.TransferServiceStub(seeding["transfer"])
        names: dict[str, set[str]] = {}

        def add(field: str, *values: str) -> None:
            names.setdefault(field, set()).update(v for v in values if v)

        machine = fsm(
            "plan", {"plan": "planner", "code": "coder"},
            edge("plan", "code", "history", "tasks"), edge("code", "plan", "history"),
        )
        for _ in range(runs):
            run = create_run(registry, full_profile("planner"), full_profile("coder"), machine=machine)
            planner = open_instance(registry, run.run_id, "planner")
            copy = fork(registry, run.run_id, planner.agent_id)
            put_everything(modulestore, planner, "seeded")
            moved = transition(transfer, run.run_id, copy.agent_id, "code")
            for inst in (planner, copy):
                add("store_id", *store_ids(inst).values())
                add("source_store_id", *store_ids(inst).values())
            agents = (planner.agent_id, copy.agent_id, moved.successor_agent_id)
            for name in ("agent_id", "parent_agent_id", "predecessor_agent_id", "successor_agent_id",
                         "read_set_source_agent_id"):
                add(name, *agents)
            add("run_id", run.run_id)
            add("transfer_id", moved.transfer_id)
        tools = svc.ListToolsRequest()
        add("tool_name", *(t.name for t in modulestore.ListTools(tools).tools))
        add("profile", "planner", "coder")
        add("name", "planner", "coder", "seeded")
        add("fsm_state", "plan", "code")
        add("to_state", "plan", "code")
        add("initial", "plan")
        add("from", "plan", "code")
        add("to", "plan", "code")
        add("carry", *KIND_WORDS)
        add("cause", "transition", "exec", "open", "spawn", "fork")
        add("request_id", *(f"fuzz-{i}" for i in range(3)), uuid.uuid4().hex)
        add("issue_id", "BUG-1")
        add("prefix", "BUG")
        add("role", "user", "assistant")
        pools = Pools({field: sorted(values) for field, values in names.items()})
        return cls(addresses, channels, pools)

    def outbox_head(self) -> int:
        """ModuleStore's outbox head: where every module change lands, so a refusal must leave it."""
        answer = self.channels["modulestore"].unary_unary(
            "/ggmodules.internal.v1.ModuleStoreInternalService/ReadOutbox",
            request_serializer=svc.ReadOutboxRequest.SerializeToString,
            response_deserializer=svc.ReadOutboxResponse.FromString,
        )(svc.ReadOutboxRequest(page_size=1), timeout=30, metadata=bearer(CREDENTIALS.service))
        return int(answer.head_origin_seq)

    def call(
        self, service: str, method: MethodDescriptor, request: Message, *, stream_items: int = 3
    ) -> tuple[grpc.StatusCode, status_pb2.Status | None]:
        """Sends `request` as raw bytes and reads the answer (a stream: at most `stream_items` items, within
        a short deadline). The status code, and the rich status when the service sent one."""
        channel = self.channels[service]
        body = request.SerializeToString()
        path = full_name(method)
        metadata = bearer(WALLET.credential_for(path, request))
        try:
            if method.server_streaming:
                stream = channel.unary_stream(path)(body, timeout=0.5, metadata=metadata)
                for i, _ in enumerate(stream):
                    if i + 1 >= stream_items:
                        stream.cancel()
                        break
            else:
                channel.unary_unary(path)(body, timeout=30, metadata=metadata)
        except grpc.RpcError as err:
            return err.code(), rich_status(err)
        return grpc.StatusCode.OK, None


def full_name(method: MethodDescriptor) -> str:
    """The method's path on the wire, as a call names it (/package.Service/Method)."""
    return f"/{method.containing_service.full_name}/{method.name}"
