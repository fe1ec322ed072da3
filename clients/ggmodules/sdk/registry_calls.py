"""Plans for every Registry RPC."""

from __future__ import annotations

from collections.abc import Sequence

from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.sdk import decode, encode
from ggmodules.sdk.plans import Plan, mutation, read
from ggmodules.sdk.profiles import Fsm, Profile
from ggmodules.sdk.results import Instance, Page, Run


def create_run(name: str, profiles: Sequence[Profile] = (), *, board: bool = False,
               fsm: Fsm | None = None) -> Plan[Run]:
    """A new run from its profiles, board switch and optional FSM (validated at launch, R25)."""
    request = pb.CreateRunRequest(name=name, profiles=[encode.profile(p) for p in profiles],
                                  board_enabled=board)
    if fsm is not None:
        request.fsm.CopyFrom(encode.fsm(fsm))
    return mutation("registry", "CreateRun", request, lambda r: decode.run(r.run))


def get_run(run_id: str) -> Plan[Run]:
    return read("registry", "GetRun", pb.GetRunRequest(run_id=run_id), lambda r: decode.run(r.run))


def list_runs(*, page_size: int = 0, page_token: str = "") -> Plan[Page[Run]]:
    return read("registry", "ListRuns", pb.ListRunsRequest(page_size=page_size, page_token=page_token),
                lambda r: Page(tuple(decode.run(x) for x in r.runs), r.next_page_token))


def finish_run(run_id: str) -> Plan[Run]:
    return mutation("registry", "FinishRun", pb.FinishRunRequest(run_id=run_id), lambda r: decode.run(r.run))


def _instance(response: pb.OpenInstanceResponse) -> Instance:
    return decode.instance(response.instance)


def open_instance(run_id: str, profile: str, *, fsm_state: str = "") -> Plan[Instance]:
    """A root instance of a profile (with an FSM: in `fsm_state`, by default the initial state)."""
    return mutation("registry", "OpenInstance",
                    pb.OpenInstanceRequest(run_id=run_id, profile=profile, fsm_state=fsm_state), _instance)


def spawn_subagent(run_id: str, parent_agent_id: str, profile: str) -> Plan[Instance]:
    """A subagent of a parent: memories follow the profile's scope, the board is shared."""
    return mutation("registry", "SpawnSubagent",
                    pb.SpawnSubagentRequest(run_id=run_id, parent_agent_id=parent_agent_id, profile=profile),
                    _instance)


def fork_instance(run_id: str, agent_id: str) -> Plan[Instance]:
    """A copy of an instance (R17): its own window and tasks, the same board, memories by scope."""
    return mutation("registry", "ForkInstance", pb.ForkInstanceRequest(run_id=run_id, agent_id=agent_id),
                    _instance)


def get_instance(run_id: str, agent_id: str) -> Plan[Instance]:
    return read("registry", "GetInstance", pb.GetInstanceRequest(run_id=run_id, agent_id=agent_id), _instance)


def list_instances(run_id: str, *, page_size: int = 0, page_token: str = "") -> Plan[Page[Instance]]:
    return read("registry", "ListInstances",
                pb.ListInstancesRequest(run_id=run_id, page_size=page_size, page_token=page_token),
                lambda r: Page(tuple(decode.instance(x) for x in r.instances), r.next_page_token))


def spawn(agent: Instance, profile: str) -> Plan[Instance]:
    """A subagent of this agent running `profile`."""
    return spawn_subagent(agent.run_id, agent.agent_id, profile)


def fork(agent: Instance) -> Plan[Instance]:
    """A copy of this agent (R17) under a new agent id."""
    return fork_instance(agent.run_id, agent.agent_id)
