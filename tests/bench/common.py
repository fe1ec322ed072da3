"""What every bench section shares: samples and percentiles, the requests it times, where PostgreSQL is."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_pb2, modulestore_service_pb2, modulestore_service_pb2_grpc
from ggmodules.telemetry.v1 import telemetry_service_pb2

PG_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
# Fork and exec costs are measured on 100,000-message histories (27 MB), past the 2 MiB a store may hold by
# default (GGMODULES_MODULESTORE_MAX_STORE_BYTES): the bench's ModuleStore lets a history grow that far.
LONG_HISTORIES = {"GGMODULES_MODULESTORE_MAX_STORE_BYTES_HISTORY": str(64 * 1024 * 1024)}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def bind_history(
    stub: modulestore_service_pb2_grpc.ModuleStoreServiceStub, run: str, agent: str, source: str = ""
) -> str:
    binding = modulestore_pb2.Binding(
        kind=common_pb2.KIND_HISTORY,
        action=modulestore_pb2.BIND_ACTION_FORK if source else modulestore_pb2.BIND_ACTION_CREATE,
        source_store_id=source,
        origin=common_pb2.ORIGIN_FORKED if source else common_pb2.ORIGIN_CREATED,
        may_write=True,
    )
    resp = stub.BindInstance(
        modulestore_service_pb2.BindInstanceRequest(
            request_id=uuid.uuid4().hex,
            run_id=run,
            agent_id=agent,
            profile="bench",
            cause="fork" if source else "open",
            bindings=[binding],
        )
    )
    return next(r.store_id for r in resp.roster if r.kind == common_pb2.KIND_HISTORY)


def append_request(run: str, agent: str, store: str, n: int = 1) -> modulestore_service_pb2.WriteRequest:
    return modulestore_service_pb2.WriteRequest(
        request_id=uuid.uuid4().hex,
        run_id=run,
        agent_id=agent,
        store_id=store,
        append_messages=modulestore_service_pb2.AppendMessages(
            messages=[
                modulestore_pb2.MessageInput(role="user", content=f"message {i} " + "x" * 200)
                for i in range(n)
            ],
        ),
    )


def say(run: str, agent: str, store: str, text: str) -> modulestore_service_pb2.WriteRequest:
    """A one-message history append whose event the subscribers recognise by `text`."""
    message = modulestore_pb2.MessageInput(role="user", content=text)
    return modulestore_service_pb2.WriteRequest(
        run_id=run, agent_id=agent, store_id=store,
        append_messages=modulestore_service_pb2.AppendMessages(messages=[message]),
    )  # fmt: skip


def said(item: telemetry_service_pb2.SubscribeResponse) -> str:
    """The text a streamed history append carried ("" for anything else)."""
    if item.WhichOneof("item") != "event" or item.event.event.WhichOneof("body") != "write":
        return ""
    messages = item.event.event.write.delta.history.messages
    return messages[0].content if messages else ""
