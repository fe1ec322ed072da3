"""Driving ModuleStore directly through its stub: BindInstance plans shaped as Registry sends them, writes,
and the outbox read back per agent stream."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc as svc_grpc
from tests.harness import status_of

Stub = svc_grpc.ModuleStoreServiceStub
KINDS = [c.KIND_HISTORY, c.KIND_MEMORIES, c.KIND_TASKS, c.KIND_BOARD, c.KIND_SKILLS, c.KIND_ARCHIVE]


def new_run() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"


def b(kind: int, action: int, **kw: object) -> ms.Binding:
    return ms.Binding(kind=kind, action=action, may_write=kw.pop("may_write", True), **kw)  # type: ignore[arg-type]


def open_bindings(
    profile: str = "coder",
    *,
    scope: int = c.MEMORY_SCOPE_INSTANCE,
    strategy: int = c.MEMORY_STRATEGY_SCRATCHPAD,
    caps: c.Caps | None = None,
    directory: str = "",
    memories_read_only: bool = False,
) -> list[ms.Binding]:
    """What Registry sends when a root instance of `profile` opens, every kind on."""
    if scope == c.MEMORY_SCOPE_AGENT:
        memories = b(
            c.KIND_MEMORIES,
            ms.BIND_ACTION_NAMED,
            named_key=f"profile/{profile}/memories",
            origin=c.ORIGIN_PROFILE,
            scope=scope,
            strategy=strategy,
            may_write=not memories_read_only,
        )
    else:
        memories = b(
            c.KIND_MEMORIES,
            ms.BIND_ACTION_CREATE,
            origin=c.ORIGIN_CREATED,
            scope=scope,
            strategy=strategy,
            may_write=not memories_read_only,
        )
    directory = directory or profile
    extra = {"caps": caps} if caps is not None else {}
    return [
        b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE, origin=c.ORIGIN_CREATED, **extra),
        memories,
        b(c.KIND_TASKS, ms.BIND_ACTION_CREATE, origin=c.ORIGIN_CREATED, **extra),
        b(c.KIND_BOARD, ms.BIND_ACTION_NAMED, named_key="run/board", origin=c.ORIGIN_RUN, **extra),
        b(
            c.KIND_SKILLS,
            ms.BIND_ACTION_NAMED,
            named_key=f"skills/{directory}",
            skills_directory=directory,
            origin=c.ORIGIN_PROFILE,
            **extra,
        ),
        b(c.KIND_ARCHIVE, ms.BIND_ACTION_CREATE, origin=c.ORIGIN_CREATED, **extra),
    ]


def fork_bindings(of: Agent, *, scope: int = c.MEMORY_SCOPE_INSTANCE) -> list[ms.Binding]:
    """What Registry sends to fork agent `of` (R17)."""
    if scope == c.MEMORY_SCOPE_INSTANCE:
        memories = b(
            c.KIND_MEMORIES,
            ms.BIND_ACTION_FORK,
            source_store_id=of[c.KIND_MEMORIES],
            origin=c.ORIGIN_FORKED,
            scope=scope,
        )
    else:
        origin = c.ORIGIN_PROFILE if scope == c.MEMORY_SCOPE_AGENT else c.ORIGIN_INHERITED
        memories = b(
            c.KIND_MEMORIES,
            ms.BIND_ACTION_SHARE,
            source_store_id=of[c.KIND_MEMORIES],
            origin=origin,
            scope=scope,
        )
    return [
        b(c.KIND_HISTORY, ms.BIND_ACTION_FORK, source_store_id=of[c.KIND_HISTORY], origin=c.ORIGIN_FORKED),
        memories,
        b(c.KIND_TASKS, ms.BIND_ACTION_FORK, source_store_id=of[c.KIND_TASKS], origin=c.ORIGIN_FORKED),
        b(c.KIND_BOARD, ms.BIND_ACTION_NAMED, named_key="run/board", origin=c.ORIGIN_RUN),
        b(
            c.KIND_SKILLS,
            ms.BIND_ACTION_FORK,
            source_store_id=of[c.KIND_SKILLS],
            read_set_source_agent_id=of.agent_id,
            origin=c.ORIGIN_FORKED,
        ),
        b(c.KIND_ARCHIVE, ms.BIND_ACTION_FORK, source_store_id=of[c.KIND_ARCHIVE], origin=c.ORIGIN_FORKED),
    ]


@dataclass
class Agent:
    run_id: str
    agent_id: str
    roster: dict[int, c.RosterRow] = field(default_factory=dict)

    def __getitem__(self, kind: int) -> str:
        return self.roster[kind].store_id


def bind(
    stub: Stub,
    run_id: str,
    agent_id: str,
    bindings: list[ms.Binding],
    *,
    cause: str = "open",
    parent: str = "",
    profile: str = "coder",
    request_id: str = "",
) -> Agent:
    resp = stub.BindInstance(
        svc.BindInstanceRequest(
            request_id=request_id,
            run_id=run_id,
            agent_id=agent_id,
            profile=profile,
            parent_agent_id=parent,
            cause=cause,
            bindings=bindings,
        )
    )
    return Agent(run_id, agent_id, {row.kind: row for row in resp.roster})


def open_agent(stub: Stub, run_id: str, agent_id: str, **kw: object) -> Agent:
    return bind(stub, run_id, agent_id, open_bindings(agent_id.rsplit("-", 1)[0], **kw))  # type: ignore[arg-type]


def write(stub: Stub, agent: Agent, kind: int, request_id: str = "", **op: object) -> svc.WriteResponse:
    return stub.Write(
        svc.WriteRequest(
            request_id=request_id, run_id=agent.run_id, agent_id=agent.agent_id, store_id=agent[kind], **op
        )
    )  # type: ignore[arg-type]


def messages(*contents: str, role: str = "user") -> list[ms.MessageInput]:
    return [ms.MessageInput(role=role, content=x) for x in contents]


def append(stub: Stub, agent: Agent, *contents: str, start_turn: bool = False) -> svc.WriteResponse:
    return write(
        stub,
        agent,
        c.KIND_HISTORY,
        append_messages=svc.AppendMessages(messages=messages(*contents), start_turn=start_turn),
    )


def contents(stub: Stub, agent: Agent, kind: int) -> svc.GetStoreResponse:
    return stub.GetStore(
        svc.GetStoreRequest(run_id=agent.run_id, store_id=agent[kind], agent_id=agent.agent_id)
    )


def events(stub: Stub, run_id: str) -> list[event_pb2.Event]:
    out: list[event_pb2.Event] = []
    after = 0
    while True:
        page = stub.ReadOutbox(svc.ReadOutboxRequest(after_origin_seq=after, page_size=500, run_id=run_id))
        out.extend(page.events)
        if not page.events:
            return out
        after = page.events[-1].origin_seq


def streams(stub: Stub, run_id: str) -> dict[str, list[event_pb2.Event]]:
    """The run's events grouped by the agent whose stream carries them, in stream order."""
    grouped: dict[str, list[event_pb2.Event]] = {}
    for ev in events(stub, run_id):
        grouped.setdefault(ev.agent_id, []).append(ev)
    return grouped


def shape(stream: list[event_pb2.Event]) -> list[tuple[str, str]]:
    """(body, store_id) per event: the sequence a stream test asserts."""
    return [(ev.WhichOneof("body") or "", ev.store_id) for ev in stream]


def refusal(call: Callable[[], object]) -> tuple[grpc.StatusCode, str, str]:
    """Calls `call`, expecting a refusal; its code, ErrorInfo reason and message."""
    try:
        call()
    except grpc.RpcError as err:
        code, reason = status_of(err)
        return code, reason, err.details() or ""  # type: ignore[attr-defined]
    raise AssertionError("the call was expected to be refused")
