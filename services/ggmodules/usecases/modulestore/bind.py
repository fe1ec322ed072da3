"""BindInstance: one store per kind for a newly minted agent, by the copy rules, then its roster (R32).

On the new agent's stream: one roster event, then one bind event per bound store, and nothing else. A
sharer gets no backlog (R13), a fork copies no pending event (R12). An agent is bound once (R36).
"""

from __future__ import annotations

from ggmodules.core.errors import AlreadyExists
from ggmodules.core.kinds import Kind
from ggmodules.core.modules import skills
from ggmodules.core.modules.binding import check_plan
from ggmodules.core.modules.copying import resolve
from ggmodules.core.roster import Binding, BindPlan, RosterRow
from ggmodules.core.vocabulary import BindAction, MemoryScope, MemoryStrategy
from ggmodules.usecases.modulestore.port import BindUnit, Bound
from ggmodules.wire.modulestore_events import bind_event, roster_event


def bind(unit: BindUnit, plan: BindPlan) -> list[RosterRow]:
    check_plan(plan)
    if unit.agent_exists(plan.run_id, plan.agent_id):
        raise AlreadyExists(
            f"agent {plan.agent_id!r} is already bound in run {plan.run_id!r}; a roster never changes within "
            "an incarnation (R36): mint a new agent id",
            metadata={"agent_id": plan.agent_id},
        )
    rows: list[RosterRow] = []
    bound_stores: list[tuple[Binding, Bound]] = []
    for kind in Kind:
        b = plan.binding(kind)
        if b is None or b.action == BindAction.DISABLED:
            rows.append(RosterRow(kind))
            continue
        bound = unit.bind_store(plan, b, resolve(kind, b.action, b.origin))
        bound_stores.append((b, bound))
        memories = kind == Kind.MEMORIES
        rows.append(
            RosterRow(
                kind,
                bound.store_id,
                True,
                bound.origin,
                b.scope if memories else MemoryScope.UNSPECIFIED,
                b.may_write,
                bound.head.strategy if memories else MemoryStrategy.UNSPECIFIED,
            )
        )
    unit.add_agent(plan.run_id, plan.agent_id, plan.profile, plan.cause, plan.parent_agent_id)
    events = [roster_event(plan.run_id, plan.agent_id, plan.profile, plan.parent_agent_id, plan.cause, rows)]
    for b, bound in bound_stores:
        figures = bound.head.figures
        if b.kind == Kind.SKILLS:
            figures = skills.holder_figures(figures, unit.read_set(bound.read_set_id))
        events.append(
            bind_event(
                plan.run_id,
                plan.agent_id,
                b.kind,
                bound.store_id,
                bound.origin,
                bound.source_store_id,
                b.may_write,
                bound.head.caps,
                figures,
            )
        )
    unit.append(events)
    return rows
