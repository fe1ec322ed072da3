"""Driving ModuleStore directly through its stub: BindInstance plans made by the code Registry makes them
with (`core.registry.plans` and `wire.registry.bind_request`), writes, and the outbox read back per agent
stream. `b` builds a single binding by hand, for the tests that send ModuleStore a plan Registry never
would (to see it refused)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2
from ggmodules.core.registry.plans import plan_fork, plan_open, plan_spawn
from ggmodules.core.registry.profiles import ModuleInput, Profile, ProfileInput, validate_profile
from ggmodules.core.roster import BindPlan, RosterRow
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc as svc_grpc
from ggmodules.wire.registry import bind_request, roster_from_proto

Stub = svc_grpc.ModuleStoreServiceStub
KINDS = [c.KIND_HISTORY, c.KIND_MEMORIES, c.KIND_TASKS, c.KIND_BOARD, c.KIND_SKILLS, c.KIND_ARCHIVE]


def new_run() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"


def b(kind: int, action: int, **kw: object) -> ms.Binding:
    return ms.Binding(kind=kind, action=action, may_write=kw.pop("may_write", True), **kw)  # type: ignore[arg-type]


WORDS = ("history", "memories", "tasks", "skills", "archive")


def profile_of(
    name: str = "coder",
    *,
    scope: int = c.MEMORY_SCOPE_INSTANCE,
    strategy: int = c.MEMORY_STRATEGY_SCRATCHPAD,
    caps: c.Caps | None = None,
    directory: str = "",
    memories_read_only: bool = False,
    without: tuple[str, ...] = (),
) -> Profile:
    """A profile as Registry validates it: every profile-switched kind on except those `without`; `caps` on
    each of them, memories under `scope` and `strategy`."""
    cap = caps or c.Caps()
    modules = {
        word: ModuleInput(
            enabled=True,
            max_items=cap.max_items,
            max_bytes=cap.max_bytes,
            **(
                {"strategy": strategy, "scope": scope, "read_only": memories_read_only}
                if word == "memories"
                else {"skills_directory": directory} if word == "skills" else {}
            ),
        )
        for word in WORDS
        if word not in without
    }
    return validate_profile(ProfileInput(name, modules))


def _bindings(plan: BindPlan) -> list[ms.Binding]:
    """The bindings of `plan` exactly as Registry puts them in its BindInstanceRequest."""
    return list(bind_request("", "", plan, "").bindings)


def open_bindings(profile: str = "coder", **config: Any) -> list[ms.Binding]:
    """What Registry sends when a root instance of `profile` opens (core.registry.plans.plan_open), in a run
    with a board; `config` as for `profile_of`."""
    return _bindings(plan_open(profile_of(profile, **config), board_enabled=True))


def spawn_bindings(profile: Profile, parent: Agent) -> list[ms.Binding]:
    """What Registry sends to spawn a subagent of `profile` under `parent` (plan_spawn)."""
    return _bindings(plan_spawn(profile, True, parent.agent_id, parent.rows()))


def fork_bindings(of: Agent) -> list[ms.Binding]:
    """What Registry sends to fork agent `of` (plan_fork, R17), from its profile and roster."""
    assert of.profile is not None, f"{of.agent_id} was not opened from a profile"
    return _bindings(plan_fork(of.profile, True, of.agent_id, of.rows()))


@dataclass
class Agent:
    run_id: str
    agent_id: str
    roster: dict[int, c.RosterRow] = field(default_factory=dict)
    # The profile the agent was opened under, when it was opened from one (see `open_agent`).
    profile: Profile | None = None

    def __getitem__(self, kind: int) -> str:
        return self.roster[kind].store_id

    def rows(self) -> tuple[RosterRow, ...]:
        """The roster as Registry records it."""
        return roster_from_proto(self.roster.values())


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


def open_agent(stub: Stub, run_id: str, agent_id: str, **config: Any) -> Agent:
    """Opens `agent_id` as a root instance of the profile its id names, as Registry would bind it."""
    profile = profile_of(agent_id.rsplit("-", 1)[0], **config)
    bindings = _bindings(plan_open(profile, board_enabled=True))
    agent = bind(stub, run_id, agent_id, bindings, profile=profile.name)
    agent.profile = profile
    return agent


def fork_agent(stub: Stub, of: Agent, agent_id: str) -> Agent:
    """Forks `of` into `agent_id` as Registry would (plan_fork)."""
    copy = bind(stub, of.run_id, agent_id, fork_bindings(of), cause="fork", parent=of.agent_id,
                profile=of.profile.name if of.profile else "coder")
    copy.profile = of.profile
    return copy


def spawn_agent(stub: Stub, parent: Agent, agent_id: str, **config: Any) -> Agent:
    """Spawns `agent_id` under `parent` as a subagent of the profile its id names, as Registry would."""
    profile = profile_of(agent_id.rsplit("-", 1)[0], **config)
    child = bind(stub, parent.run_id, agent_id, spawn_bindings(profile, parent), cause="spawn",
                 parent=parent.agent_id, profile=profile.name)
    child.profile = profile
    return child


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


def archive(stub: Stub, agent: Agent, title: str, *contents: str) -> int:
    body = svc.ArchiveThread(title=title, messages=messages(*contents))
    return write(stub, agent, c.KIND_ARCHIVE, archive_thread=body).thread_id


def search(stub: Stub, agent: Agent, query: str, **kw: object) -> svc.SearchArchiveResponse:
    request = svc.SearchArchiveRequest(
        run_id=agent.run_id, agent_id=agent.agent_id, store_id=agent[c.KIND_ARCHIVE], query=query, **kw
    )  # type: ignore[arg-type]
    response: svc.SearchArchiveResponse = stub.SearchArchive(request)
    return response


def titles(response: svc.SearchArchiveResponse) -> list[str]:
    return [t.title for t in response.threads]
