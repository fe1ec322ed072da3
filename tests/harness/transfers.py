"""Shared by the Transfer tests over real services: runs, writes in each kind, transfers, and reading back
what a successor got (outcomes, roster, store contents, the outbox)."""

from __future__ import annotations

from typing import Any

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2
from ggmodules.core.transfer.plan import Sides, plan_exec
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_pb2
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.transfer.v1 import transfer_pb2
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from ggmodules.wire.registry import roster_from_proto
from ggmodules.wire.transfer import handover_request, run_spec
from tests.harness.registry import KIND_WORD, edge, fsm, rows

# plan -> code, carrying history and tasks: the machine most transfer tests run.
PLANNING = fsm(
    "plan",
    {"plan": "planner", "code": "coder"},
    edge("plan", "code", "history", "tasks"),
)

KIND = {word: kind for kind, word in KIND_WORD.items()}
OUTCOME = {
    c.OUTCOME_CARRIED: "carried",
    c.OUTCOME_DROPPED: "dropped",
    c.OUTCOME_REINITIALIZED: "reinitialized",
    c.OUTCOME_FRESH: "fresh",
}


def transition(
    transfer: Any, run_id: str, agent_id: str, to_state: str, request_id: str = ""
) -> transfer_pb2.Transfer:
    request = tr.TransitionRequest(request_id=request_id, run_id=run_id, agent_id=agent_id, to_state=to_state)
    answer: transfer_pb2.Transfer = transfer.Transition(request).transfer
    return answer


def exec_(
    transfer: Any, run_id: str, agent_id: str, profile: str, request_id: str = "", leave_fsm: bool = False
) -> transfer_pb2.Transfer:
    request = tr.ExecRequest(
        request_id=request_id, run_id=run_id, agent_id=agent_id, profile=profile, leave_fsm=leave_fsm
    )
    answer: transfer_pb2.Transfer = transfer.Exec(request).transfer
    return answer


def exec_kept_state_unchecked(
    registry: Any, modulestore: Any, run_id: str, agent_id: str, profile: str
) -> str:
    """An exec as Transfer made one before execs were checked against the FSM state their successor keeps:
    the same plan and the same internal calls (ReserveSuccessor, Handover, CompleteSuccessor), without the
    check. The only way left to reach R26's run ending, the suite's own defect; returns the successor."""
    run = run_status(registry, run_id)
    predecessor = instance(registry, run_id, agent_id)
    spec, _ = run_spec(run)
    plan = plan_exec(
        Sides(
            predecessor_agent_id=agent_id,
            predecessor_profile=spec.profile(predecessor.profile, run_id),
            roster=roster_from_proto(predecessor.roster),
            successor=spec.profile(profile, run_id),
            board_enabled=spec.board_enabled,
        )
    )
    reserved = registry.ReserveSuccessor(
        reg.ReserveSuccessorRequest(
            request_id=f"unchecked-{agent_id}/reserve", run_id=run_id, predecessor_agent_id=agent_id,
            profile=profile, cause="exec", fsm_state=predecessor.fsm_state,
        )
    )
    handover = handover_request(run_id, plan)
    handover.request_id, handover.successor_agent_id = f"unchecked-{agent_id}/handover", reserved.agent_id
    handed = modulestore.Handover(handover)
    registry.CompleteSuccessor(
        reg.CompleteSuccessorRequest(
            request_id=f"unchecked-{agent_id}/complete", run_id=run_id, agent_id=reserved.agent_id,
            roster=handed.roster, opening_note=plan.opening_note,
        )
    )
    return str(reserved.agent_id)


def outcomes(t: transfer_pb2.Transfer) -> dict[str, tuple[str, str, str]]:
    """Per kind word: (outcome, store before, store after)."""
    return {KIND_WORD[o.kind]: (OUTCOME[o.outcome], o.store_id_before, o.store_id_after) for o in t.outcomes}


def instance(registry: Any, run_id: str, agent_id: str) -> registry_pb2.Instance:
    found: registry_pb2.Instance = registry.GetInstance(
        reg.GetInstanceRequest(run_id=run_id, agent_id=agent_id)
    ).instance
    return found


def run_status(registry: Any, run_id: str) -> registry_pb2.Run:
    run: registry_pb2.Run = registry.GetRun(reg.GetRunRequest(run_id=run_id)).run
    return run


def instance_ids(registry: Any, run_id: str) -> list[str]:
    page = registry.ListInstances(reg.ListInstancesRequest(run_id=run_id, page_size=500))
    return [i.agent_id for i in page.instances]


# -- writing one recognisable thing into a store of each kind


def _op(word: str, marker: str, strategy: int = c.MEMORY_STRATEGY_SCRATCHPAD) -> dict[str, Any]:
    if word == "history":
        return {
            "append_messages": svc.AppendMessages(messages=[ms.MessageInput(role="user", content=marker)])
        }
    if word == "memories":
        if strategy == c.MEMORY_STRATEGY_MARKDOWN_INDEX:
            return {"write_file": svc.WriteFile(name=marker, body=marker, index_line=marker)}
        return {"write_pad": svc.WritePad(text=marker)}
    if word == "tasks":
        return {"create_task": svc.CreateTask(title=marker)}
    if word == "board":
        return {"create_issue": svc.CreateIssue(prefix="BUG", title=marker)}
    if word == "skills":
        return {"put_skill": svc.PutSkill(name=marker, description=marker, body=marker)}
    return {
        "archive_thread": svc.ArchiveThread(
            title=marker, messages=[ms.MessageInput(role="user", content="x")]
        )
    }


def put(modulestore: Any, inst: registry_pb2.Instance, word: str, marker: str) -> svc.WriteResponse:
    row = rows(inst)[word]
    request = svc.WriteRequest(
        run_id=inst.run_id, agent_id=inst.agent_id, store_id=row.store_id, **_op(word, marker, row.strategy)
    )
    response: svc.WriteResponse = modulestore.Write(request)
    return response


def put_everything(modulestore: Any, inst: registry_pb2.Instance, marker: str) -> None:
    for word, row in rows(inst).items():
        if row.enabled:
            put(modulestore, inst, word, marker)


def markers(contents: Any, word: str) -> list[str]:
    """The recognisable texts a store of `word` holds."""
    got = getattr(contents, word)
    if word == "history":
        return [m.content for m in got.messages]
    if word == "memories":
        return [e.body for e in got.entries]
    if word == "tasks":
        return [t.title for t in got.tasks]
    if word == "board":
        return [i.title for i in got.issues]
    if word == "skills":
        return [s.name for s in got.catalogue]
    return [t.title for t in got.threads]


def store(modulestore: Any, run_id: str, store_id: str, agent_id: str) -> svc.GetStoreResponse:
    response: svc.GetStoreResponse = modulestore.GetStore(
        svc.GetStoreRequest(run_id=run_id, store_id=store_id, agent_id=agent_id)
    )
    return response


def holders(modulestore: Any, run_id: str, store_id: str) -> dict[str, bool]:
    """Agent id -> active, for one store of the run."""
    found: dict[str, bool] = {}
    token = ""
    while True:
        page = modulestore.ListStores(svc.ListStoresRequest(run_id=run_id, page_size=500, page_token=token))
        for s in page.stores:
            if s.store_id == store_id:
                found = {h.agent_id: h.active for h in s.holders}
        token = page.next_page_token
        if not token:
            return found


# -- the outbox


def head(modulestore: Any) -> int:
    return int(modulestore.ReadOutbox(svc.ReadOutboxRequest(after_origin_seq=0, page_size=1)).head_origin_seq)


def events_after(modulestore: Any, run_id: str, after: int) -> list[event_pb2.Event]:
    out: list[event_pb2.Event] = []
    while True:
        page = modulestore.ReadOutbox(
            svc.ReadOutboxRequest(after_origin_seq=after, page_size=500, run_id=run_id)
        )
        out.extend(page.events)
        if not page.events:
            return out
        after = page.events[-1].origin_seq


def shape(events: list[event_pb2.Event]) -> list[tuple[str, str, str]]:
    """(body, agent, store) per event."""
    return [(e.WhichOneof("body") or "", e.agent_id, e.store_id) for e in events]
