"""R49 under real concurrency: one mutation sent by several clients at the same moment, many times over.

Every copy must get the first answer, never a different one (a HANDED_ON from a handover that already
happened, a SYSTEM_PROMPT_ALREADY_SET from a prompt the first copy set), and the mutation applies once:
one system prompt, one task, one successor, one roster event on the new agent's stream.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from tests.harness import status_of
from tests.harness.handing import carry_all, request
from tests.harness.modulestore import Stub, contents, new_run, open_agent, streams
from tests.harness.registry import create_run, edge, fsm, full_profile, instance_ids, open_instance

COPIES = 8
ROUNDS = 5
Answer = tuple[str, Any]


def at_once(call: Callable[[Any], Any], req: Any) -> list[Answer]:
    """`call(req)` from COPIES threads released together: each one's answer, or its code and reason."""
    start = threading.Barrier(COPIES)
    answers: list[Answer] = [("none", None)] * COPIES

    def one(i: int) -> None:
        start.wait()
        try:
            answers[i] = ("ok", call(req))
        except grpc.RpcError as err:
            answers[i] = ("refused", status_of(err))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(COPIES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def one_answer(answers: list[Answer]) -> Any:
    """The answer every copy got, which must be a success."""
    assert all(a == answers[0] for a in answers), sorted({str(a)[:200] for a in answers})
    kind, answer = answers[0]
    assert kind == "ok", answer
    return answer


def _rosters(modulestore: Stub, run_id: str, agent_id: str) -> int:
    stream = streams(modulestore, run_id).get(agent_id, [])
    return sum(1 for e in stream if e.WhichOneof("body") == "roster")


def test_r49_racing_copies_of_a_write_get_the_first_answer_and_apply_once(modulestore: Stub) -> None:
    for _ in range(ROUNDS):
        agent = open_agent(modulestore, new_run(), "coder-0")
        prompt = svc.WriteRequest(
            request_id=uuid.uuid4().hex, run_id=agent.run_id, agent_id=agent.agent_id,
            store_id=agent[c.KIND_HISTORY], set_system_prompt=svc.SetSystemPrompt(text="You code."),
        )
        one_answer(at_once(modulestore.Write, prompt))
        task = svc.WriteRequest(
            request_id=uuid.uuid4().hex, run_id=agent.run_id, agent_id=agent.agent_id,
            store_id=agent[c.KIND_TASKS], create_task=svc.CreateTask(title="once"),
        )
        assert one_answer(at_once(modulestore.Write, task)).task_id == 1
        assert [t.title for t in contents(modulestore, agent, c.KIND_TASKS).contents.tasks.tasks] == ["once"]
        stream = streams(modulestore, agent.run_id)[agent.agent_id]
        assert [e.write.op for e in stream if e.WhichOneof("body") == "write"] == [
            "set_system_prompt", "create_task"
        ]


def test_r49_racing_copies_of_a_handover_hand_over_once(modulestore: Stub) -> None:
    for _ in range(ROUNDS):
        pred = open_agent(modulestore, new_run(), "planner-0")
        handover = request(pred, "coder-0", carry_all(), request_id=uuid.uuid4().hex)
        answer = one_answer(at_once(modulestore.Handover, handover))
        assert {r.store_id for r in answer.roster if r.enabled} == {r.store_id for r in pred.roster.values()}
        assert _rosters(modulestore, pred.run_id, "coder-0") == 1


def test_r49_racing_copies_of_spawns_and_forks_open_one_instance_each(
    registry: Any, modulestore: Stub
) -> None:
    run = create_run(registry, full_profile("coder"))
    parent = open_instance(registry, run.run_id, "coder")
    for _ in range(ROUNDS):
        for call, req in (
            (registry.SpawnSubagent, reg.SpawnSubagentRequest(
                request_id=uuid.uuid4().hex, run_id=run.run_id, parent_agent_id=parent.agent_id,
                profile="coder")),
            (registry.ForkInstance, reg.ForkInstanceRequest(
                request_id=uuid.uuid4().hex, run_id=run.run_id, agent_id=parent.agent_id)),
        ):
            before = instance_ids(registry, run.run_id)
            opened = one_answer(at_once(call, req)).instance
            assert instance_ids(registry, run.run_id) == [*before, opened.agent_id]
            assert _rosters(modulestore, run.run_id, opened.agent_id) == 1


def test_r49_racing_copies_of_execs_and_transitions_make_one_successor(
    registry: Any, modulestore: Stub, transfer: Any
) -> None:
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history", "tasks"))
    run = create_run(registry, full_profile("planner"), full_profile("coder"), machine=machine)
    for n in range(ROUNDS):
        agent = open_instance(registry, run.run_id, "planner").agent_id
        if n % 2:
            call, req = transfer.Exec, tr.ExecRequest(
                request_id=uuid.uuid4().hex, run_id=run.run_id, agent_id=agent, profile="coder")
        else:
            call, req = transfer.Transition, tr.TransitionRequest(
                request_id=uuid.uuid4().hex, run_id=run.run_id, agent_id=agent, to_state="code")
        done = one_answer(at_once(call, req)).transfer
        listed = registry.ListInstances(reg.ListInstancesRequest(run_id=run.run_id, page_size=500)).instances
        successors = [i.agent_id for i in listed if i.predecessor_agent_id == agent]
        assert successors == [done.successor_agent_id]
        assert _rosters(modulestore, run.run_id, done.successor_agent_id) == 1
