"""Builders and readers the Registry tests (and others) share: requests in the seed's words, runs, rosters."""

from __future__ import annotations

from typing import Any

from ggmodules.common.v1 import common_pb2
from ggmodules.registry.v1 import registry_pb2
from ggmodules.registry.v1 import registry_service_pb2 as pb

SIX = ("history", "memories", "tasks", "board", "skills", "archive")
KIND_WORD = {
    common_pb2.KIND_HISTORY: "history",
    common_pb2.KIND_MEMORIES: "memories",
    common_pb2.KIND_TASKS: "tasks",
    common_pb2.KIND_BOARD: "board",
    common_pb2.KIND_SKILLS: "skills",
    common_pb2.KIND_ARCHIVE: "archive",
}


def module(**config: Any) -> registry_pb2.ModuleConfig:
    caps = config.pop("caps", None)
    m = registry_pb2.ModuleConfig(enabled=True, **config)
    if caps:
        m.caps.CopyFrom(common_pb2.Caps(**caps))
    return m


def profile(name: str, **modules: registry_pb2.ModuleConfig) -> registry_pb2.Profile:
    return registry_pb2.Profile(name=name, modules=modules)


def full_profile(name: str, **memories: Any) -> registry_pb2.Profile:
    """Every profile-switched kind on; memories configured by `memories`."""
    return profile(name, memories=module(**memories), tasks=module(), skills=module(), archive=module())


def edge(source: str, target: str, *carry: str) -> registry_pb2.FsmEdge:
    e = registry_pb2.FsmEdge(to=target, carry=list(carry))
    setattr(e, "from", source)
    return e


def fsm(initial: str, states: dict[str, str], *edges: registry_pb2.FsmEdge) -> registry_pb2.FsmDefinition:
    return registry_pb2.FsmDefinition(
        initial=initial,
        states=[registry_pb2.FsmState(name=n, profile=p) for n, p in states.items()],
        edges=list(edges),
    )


def create_run(
    registry: Any,
    *profiles: registry_pb2.Profile,
    board: bool = True,
    machine: registry_pb2.FsmDefinition | None = None,
    request_id: str = "",
    name: str = "test run",
) -> registry_pb2.Run:
    request = pb.CreateRunRequest(request_id=request_id, name=name, profiles=profiles, board_enabled=board)
    if machine is not None:
        request.fsm.CopyFrom(machine)
    run: registry_pb2.Run = registry.CreateRun(request).run
    return run


def open_instance(
    registry: Any, run_id: str, profile_name: str, request_id: str = ""
) -> registry_pb2.Instance:
    request = pb.OpenInstanceRequest(request_id=request_id, run_id=run_id, profile=profile_name)
    instance: registry_pb2.Instance = registry.OpenInstance(request).instance
    return instance


def spawn(
    registry: Any, run_id: str, parent: str, profile_name: str, request_id: str = ""
) -> registry_pb2.Instance:
    request = pb.SpawnSubagentRequest(
        request_id=request_id, run_id=run_id, parent_agent_id=parent, profile=profile_name
    )
    instance: registry_pb2.Instance = registry.SpawnSubagent(request).instance
    return instance


def fork(registry: Any, run_id: str, agent_id: str, request_id: str = "") -> registry_pb2.Instance:
    request = pb.ForkInstanceRequest(request_id=request_id, run_id=run_id, agent_id=agent_id)
    instance: registry_pb2.Instance = registry.ForkInstance(request).instance
    return instance


def rows(instance: registry_pb2.Instance) -> dict[str, common_pb2.RosterRow]:
    """The roster by kind word."""
    return {KIND_WORD[r.kind]: r for r in instance.roster}


def store_ids(instance: registry_pb2.Instance) -> dict[str, str]:
    return {word: r.store_id for word, r in rows(instance).items()}


def all_run_ids(registry: Any) -> list[str]:
    ids, token = [], ""
    while True:
        page = registry.ListRuns(pb.ListRunsRequest(page_size=500, page_token=token))
        ids += [r.run_id for r in page.runs]
        token = page.next_page_token
        if not token:
            return ids


def instance_ids(registry: Any, run_id: str) -> list[str]:
    ids, token = [], ""
    while True:
        page = registry.ListInstances(pb.ListInstancesRequest(run_id=run_id, page_size=500, page_token=token))
        ids += [i.agent_id for i in page.instances]
        token = page.next_page_token
        if not token:
            return ids
