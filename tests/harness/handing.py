"""Handover plans, and reading back what a successor got.

`planned` and `planned_request` make a plan with the code Transfer makes it with (`core.transfer.plan`,
`wire.transfer.handover_request`), opening note included; `carry`, `drop`, `fresh` and `reinit` build a
plan kind by kind, for the tests that hand ModuleStore a plan Transfer would not make (to see what it does
with each outcome, or that it refuses)."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.core.kinds import Kind
from ggmodules.core.registry.profiles import Profile
from ggmodules.core.transfer.plan import Edge, Sides, TransferPlan, plan_exec, plan_transition
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.wire.transfer import handover_request
from tests.harness.modulestore import KINDS, Agent, Stub


def carry(kind: int, **binding: object) -> svc.HandoverKind:
    """The predecessor's store, carried (action unspecified), held writable unless told otherwise."""
    binding.setdefault("may_write", True)
    return svc.HandoverKind(kind=kind, outcome=c.OUTCOME_CARRIED, binding=ms.Binding(kind=kind, **binding))  # type: ignore[arg-type]


def drop(kind: int) -> svc.HandoverKind:
    return svc.HandoverKind(kind=kind, outcome=c.OUTCOME_DROPPED)


def fresh(kind: int, action: int = ms.BIND_ACTION_CREATE, **binding: object) -> svc.HandoverKind:
    binding.setdefault("may_write", True)
    return svc.HandoverKind(
        kind=kind,
        outcome=c.OUTCOME_FRESH,
        binding=ms.Binding(kind=kind, action=action, **binding),  # type: ignore[arg-type]
    )


def reinit(
    kind: int, action: int = ms.BIND_ACTION_CREATE, note: str = "", **binding: object
) -> svc.HandoverKind:
    binding.setdefault("may_write", True)
    return svc.HandoverKind(
        kind=kind,
        outcome=c.OUTCOME_REINITIALIZED,
        binding=ms.Binding(kind=kind, action=action, **binding),  # type: ignore[arg-type]
        note=note,
    )


def carry_all(**overrides: svc.HandoverKind) -> list[svc.HandoverKind]:
    """Every kind carried, except those given by word (history=..., memories=..., ...)."""
    words = {c.KIND_HISTORY: "history", c.KIND_MEMORIES: "memories", c.KIND_TASKS: "tasks"}
    words |= {c.KIND_BOARD: "board", c.KIND_SKILLS: "skills", c.KIND_ARCHIVE: "archive"}
    return [overrides.get(words[k], carry(k)) for k in KINDS]


def request(
    pred: Agent,
    successor: str,
    kinds: list[svc.HandoverKind],
    *,
    cause: str = "exec",
    profile: str = "",
    note: str = "",
    request_id: str = "",
) -> svc.HandoverRequest:
    return svc.HandoverRequest(
        request_id=request_id,
        run_id=pred.run_id,
        predecessor_agent_id=pred.agent_id,
        successor_agent_id=successor,
        profile=profile or successor.rsplit("-", 1)[0],
        cause=cause,
        kinds=kinds,
        opening_note=note,
    )


def hand_over(
    stub: Stub, pred: Agent, successor: str, kinds: list[svc.HandoverKind], **kw: str
) -> tuple[Agent, svc.HandoverResponse]:
    """Hands `pred`'s modules to `successor`; the successor as an Agent, and the answer."""
    resp = stub.Handover(request(pred, successor, kinds, **kw))
    return Agent(pred.run_id, successor, {r.kind: r for r in resp.roster if r.enabled}), resp


def outcomes(resp: svc.HandoverResponse) -> dict[int, tuple[int, str, str]]:
    """Per kind: (outcome, store before, store after)."""
    return {o.kind: (o.outcome, o.store_id_before, o.store_id_after) for o in resp.outcomes}


def holders(stub: Stub, run_id: str, store_id: str) -> dict[str, tuple[int, bool, bool]]:
    """Per holder of a store: (origin, may_write, active)."""
    store = stub.GetStore(svc.GetStoreRequest(run_id=run_id, store_id=store_id)).store
    return {h.agent_id: (h.origin, h.may_write, h.active) for h in store.holders}


def store(stub: Stub, run_id: str, store_id: str) -> ms.Store:
    return stub.GetStore(svc.GetStoreRequest(run_id=run_id, store_id=store_id)).store


def planned(pred: Agent, successor: Profile, edge: tuple[str, ...] = ()) -> TransferPlan:
    """Transfer's plan for handing `pred` (opened from a profile) to an agent of `successor`: an exec, or a
    transition to state `code` along an edge carrying the kind words `edge`."""
    assert pred.profile is not None, f"{pred.agent_id} was not opened from a profile"
    sides = Sides(pred.agent_id, pred.profile, pred.rows(), successor, board_enabled=True)
    if not edge:
        return plan_exec(sides)
    return plan_transition(sides, Edge("plan", "code", tuple(Kind[w.upper()] for w in edge)))


def planned_request(
    pred: Agent, successor: str, plan: TransferPlan, request_id: str = ""
) -> svc.HandoverRequest:
    """The HandoverRequest Transfer sends for `plan`, to `successor`."""
    req = handover_request(pred.run_id, plan)
    req.successor_agent_id, req.request_id = successor, request_id
    return req
