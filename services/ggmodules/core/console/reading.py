"""What one store reads as, the same on every grain: sharing, handed on, dropped, costs, causes."""

from __future__ import annotations

from ggmodules.core.console.fold import Folded
from ggmodules.core.console.state import ENDED_RUN, Happening, Holding, Instance, Store
from ggmodules.core.console.views import (
    NONE_BY_CONSTRUCTION,
    UNMEASURED,
    CoHolder,
    Cost,
    CostState,
    IdentityStrip,
    LifetimeEntry,
    measured,
)
from ggmodules.core.kinds import Kind
from ggmodules.core.vocabulary import Cause, Origin


def running(folded: Folded, agent_id: str) -> bool:
    inst = folded.instances.get(agent_id)
    return inst is not None and not inst.handed_on_to and folded.status not in ENDED_RUN


def shared(store: Store) -> bool:
    """Held by more than one instance at once (R38). A successor never counts: its predecessor let go
    before it arrived, so passing a store on never raises the number held at once."""
    return store.peak > 1


def link_count(store: Store) -> int:
    return store.peak if shared(store) else 0


def handed_on(store: Store) -> bool:
    """Several holders, one at a time: passed on, counted as shared nowhere (R38)."""
    return not shared(store) and len(store.holders) > 1


def dropped(store: Store) -> bool:
    """Every holder let go of it (a drain, or its holder handed on without it)."""
    return bool(store.holders) and not store.active()


def written(store: Store) -> bool:
    return store.written or store.figures.writes > 0


def running_holders(folded: Folded, store: Store) -> int:
    return sum(1 for h in store.active() if running(folded, h.agent_id))


def holder_cost(folded: Folded, store: Store, held: Holding) -> Cost:
    """From the holder's latest turn report (R43): measured if it lists the store, else unmeasured; the
    archive holds no context band, so its cost is none by construction."""
    if store.kind == Kind.ARCHIVE:
        return NONE_BY_CONSTRUCTION
    report = folded.reports.get(held.agent_id)
    if report is None:
        return UNMEASURED
    tokens = report.by_store.get(store.store_id, report.by_kind.get(store.kind))
    return UNMEASURED if tokens is None else measured(tokens)


def summed(costs: list[Cost], kind: Kind) -> Cost:
    """A sum over live windows is measured only when every one of them was measured; a partial sum
    would pass an unmeasured window off as zero."""
    if kind == Kind.ARCHIVE:
        return NONE_BY_CONSTRUCTION
    if not costs or any(c.state is not CostState.MEASURED for c in costs):
        return UNMEASURED
    return measured(sum(c.tokens for c in costs))


def live_cost(folded: Folded, store: Store) -> Cost:
    """What the store costs every turn across every live holder."""
    return summed([holder_cost(folded, store, h) for h in store.active()], store.kind)


def cause_of(folded: Folded, agent_id: str) -> str:
    """The succession that brought an instance about: open, spawn by P, fork of X, transition A -> B,
    exec A -> B."""
    inst = folded.instances.get(agent_id)
    if inst is None or not inst.cause:
        return ""
    match inst.cause:
        case Cause.SPAWN:
            return f"spawn by {inst.parent_agent_id}"
        case Cause.FORK:
            return f"fork of {inst.parent_agent_id}"
        case Cause.TRANSITION | Cause.EXEC:
            return f"{inst.cause.word} {inst.predecessor_agent_id} -> {agent_id}"
        case other:
            return other.word


def lifetime(folded: Folded, store: Store) -> tuple[LifetimeEntry, ...]:
    return tuple(_entry(folded, h) for h in store.happenings)


def _entry(folded: Folded, h: Happening) -> LifetimeEntry:
    cause = ""
    if h.succession:
        cause = cause_of(folded, h.succession) or f"handover {h.agent_id} -> {h.succession}"
    return LifetimeEntry(h.cursor, h.what, h.agent_id, cause)


def module_path(kind: Kind) -> str:
    return f"modules/{kind.word}"


def modules_view(folded: Folded) -> bool:
    """R41: some profile enables a module-backed capability beyond the window, read off the rosters.
    A log without rosters falls back to the stores it saw."""
    rosters = [i.roster for i in folded.instances.values() if i.roster is not None]
    if rosters:
        return any(r.enabled and r.kind != Kind.HISTORY for rows in rosters for r in rows)
    return any(s.kind != Kind.HISTORY for s in folded.stores.values())


def strip(folded: Folded, store: Store, held: Holding | None, offered: bool) -> IdentityStrip:
    """The identity strip as `held`'s file shows it; None: the store's own (its first holder's).
    `offered`: whether the run has a Modules view (R41)."""
    holders = list(store.holders.values())
    me = held or (holders[0] if holders else None)
    others = [h for h in holders if me is None or h.agent_id != me.agent_id]
    return IdentityStrip(
        store_id=store.store_id,
        kind=store.kind,
        origin=me.origin if me is not None else Origin.UNSPECIFIED,
        may_write=me.may_write if me is not None else False,
        lifetime=lifetime(folded, store),
        cost_this_window=holder_cost(folded, store, me) if me is not None else UNMEASURED,
        cost_all_holders=live_cost(folded, store),
        co_holders=tuple(CoHolder(h.agent_id, module_path(store.kind)) for h in others),
        shared=shared(store),
        link_count=link_count(store),
        handed_on=handed_on(store),
        dropped=dropped(store),
        links_to_modules_view=offered,
    )


def held_by(folded: Folded, inst: Instance) -> list[tuple[Store, Holding]]:
    """The stores an instance holds (or held), in kind order."""
    found = [(s, s.holders[inst.agent_id]) for s in folded.stores.values() if inst.agent_id in s.holders]
    return sorted(found, key=lambda sh: (sh[0].kind, sh[1].joined_cursor))
