"""Handover: one transaction hands a predecessor's modules to its successor (R19-R24, R27, R30-R31, R35).

Checked first: the predecessor exists, has not handed on (R27), the successor is a new agent (R36), and the
predecessor holds what the plan says. Then per kind storage carries, re-points or mints the successor's
store (storage/modulestore/receiving.py), and every holder row of the predecessor goes inactive. Then the
events, in this order: a drain on the predecessor's stream per store it lets go of (R30), the successor's
roster (R32), one restate per module the successor holds (R31).
"""

from __future__ import annotations

from collections.abc import Mapping

from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import AlreadyExists
from ggmodules.core.kinds import Kind
from ggmodules.core.modules import skills
from ggmodules.core.modules.handover import (
    HandoverPlan,
    KindResult,
    already_handed_on,
    check_held,
    check_plan,
    check_strategy,
    with_implicit_drops,
)
from ggmodules.core.roster import RosterRow
from ggmodules.core.vocabulary import Outcome
from ggmodules.usecases.modulestore.port import HandoverUnit, Held, Received
from ggmodules.wire.modulestore_events import drain_event, restate_event, roster_event


def handover(unit: HandoverUnit, plan: HandoverPlan) -> tuple[list[RosterRow], list[KindResult]]:
    check_plan(plan)
    run_id, pred, succ = plan.run_id, plan.predecessor_agent_id, plan.successor_agent_id
    mine = unit.held_for_handover(run_id, pred)  # refuses an unknown run or predecessor
    successor = unit.successor_of(run_id, pred)
    if successor is not None:
        raise already_handed_on(pred, successor)
    if unit.agent_exists(run_id, succ):
        raise AlreadyExists(
            f"agent {succ!r} is already bound in run {run_id!r}; a successor is a new agent (R36): mint a "
            "new agent id",
            metadata={"agent_id": succ},
        )
    check_held(plan, {kind: h.store_id for kind, h in mine.items()})
    entries = with_implicit_drops(plan, mine)
    for e in entries:
        if e.outcome == Outcome.CARRIED and e.receive is not None:
            check_strategy(e.kind, e.receive, mine[e.kind].head.strategy)

    history = plan.entry(Kind.HISTORY)
    carry_read_set = history is not None and history.outcome == Outcome.CARRIED
    received: dict[Kind, Received] = {}
    results: list[KindResult] = []
    for e in entries:
        before = mine.get(e.kind)
        got = unit.receive(plan, e, before, carry_read_set)
        if got is not None:
            received[e.kind] = got
        before_id = before.store_id if before is not None else ""
        results.append(KindResult(e.kind, e.outcome, before_id, got.store_id if got else "", e.note))

    unit.let_go(run_id, pred)
    unit.add_agent(run_id, succ, plan.profile, plan.cause)
    unit.record_handover(run_id, pred, succ, plan.cause)
    rows = [unit.roster_row(run_id, kind, received.get(kind)) for kind in Kind]
    unit.append(_events(unit, plan, mine, received, rows))
    return rows, results


def _events(
    unit: HandoverUnit,
    plan: HandoverPlan,
    mine: Mapping[Kind, Held],
    received: dict[Kind, Received],
    rows: list[RosterRow],
) -> list[event_pb2.Event]:
    run_id, pred, succ = plan.run_id, plan.predecessor_agent_id, plan.successor_agent_id
    kept = {got.store_id for got in received.values()}
    events = []
    for kind, h in sorted(mine.items()):
        if h.store_id in kept:
            continue
        figures = h.head.figures
        if kind == Kind.SKILLS:
            figures = skills.holder_figures(figures, unit.read_set(h.read_set_id))
        events.append(drain_event(run_id, pred, kind, h.store_id, figures, succ))
    events.append(
        roster_event(
            run_id,
            succ,
            plan.profile,
            "",
            plan.cause,
            rows,
            predecessor_agent_id=pred,
            opening_note=plan.opening_note,
        )
    )
    for kind, got in sorted(received.items()):
        figures, contents = unit.restated(run_id, got)
        events.append(restate_event(run_id, succ, kind, got.store_id, got.outcome, figures, contents, pred))
    return events
