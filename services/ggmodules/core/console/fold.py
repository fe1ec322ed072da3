"""Folding the event log into instances, stores and holders, one event at a time.

Rules read off the events:
- An instance is known from its roster (R32); a successor's roster (it names its predecessor) ends the
  predecessor: every holding it had goes inactive before the successor holds anything, so a handover never
  makes a store look held by two at once.
- A bind adds a holder; a restate adds the successor's holder (a carried store the predecessor held is a
  continuation, never a new sharer, whatever its origin: the board stays `run`); a drain ends one holding.
- Writes and snapshots update figures and contents; history and archive contents are read off the writes.
- A turn report replaces the agent's previous one: the latest report is what its window costs per turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ggmodules.core.console.events import (
    Bind,
    Drain,
    Event,
    Restate,
    Roster,
    RunStatus,
    Snapshot,
    Turn,
    Write,
)
from ggmodules.core.console.state import ENDED_RUN, Happening, Holding, Instance, Store, TurnReport
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import (
    ArchiveContents,
    Contents,
    HistoryContents,
    MemoriesContents,
)
from ggmodules.core.modules.figures import Figures
from ggmodules.core.vocabulary import Cause, Origin, Outcome

# The history writes that change the open views or pinned blocks.
HISTORY_BLOCK_OPS = frozenset({"open_view", "close_view", "pin_block", "unpin_block"})


@dataclass(slots=True)
class Folded:
    run_id: str = ""
    status: str = ""
    # The last cursor folded.
    cursor: int = 0
    instances: dict[str, Instance] = field(default_factory=dict)
    stores: dict[str, Store] = field(default_factory=dict)
    reports: dict[str, TurnReport] = field(default_factory=dict)

    def apply(self, event: Event) -> None:
        """Folds one event; an event at or before the last cursor folded was folded already."""
        if event.cursor <= self.cursor:
            return
        self.cursor = event.cursor
        self.run_id = self.run_id or event.run_id
        body = event.body
        match body:
            case Roster():
                self._roster(event, body)
            case RunStatus():
                self._run_status(event, body)
            case Turn():
                self._turn(event.agent_id, body)
            case _:
                store = self._store(event)
                if store is not None:
                    self._store_event(event, store)

    # ---- instances

    def instance(self, agent_id: str, cursor: int) -> Instance:
        found = self.instances.get(agent_id)
        if found is None:
            found = self.instances[agent_id] = Instance(agent_id, cursor)
        return found

    def _roster(self, event: Event, body: Roster) -> None:
        if not event.agent_id:
            return
        inst = self.instance(event.agent_id, event.cursor)
        if inst.roster is not None:
            return  # stated once (R32); a repeat changes nothing
        inst.profile, inst.cause, inst.roster = body.profile, body.cause, body.rows
        inst.parent_agent_id, inst.opening_note = body.parent_agent_id, body.opening_note
        inst.predecessor_agent_id = body.predecessor_agent_id
        if body.parent_agent_id and body.cause is Cause.SPAWN:
            parent = self.instance(body.parent_agent_id, event.cursor)
            _add_once(parent.subagents, inst.agent_id)
        if body.parent_agent_id and body.cause is Cause.FORK:
            _add_once(self.instance(body.parent_agent_id, event.cursor).forks, inst.agent_id)
        if body.predecessor_agent_id:
            pred = self.instance(body.predecessor_agent_id, event.cursor)
            pred.handed_on_to = inst.agent_id
            _add_once(pred.successors, inst.agent_id)
            for store in self.stores.values():
                held = store.holders.get(pred.agent_id)
                if held is not None:
                    held.active = False

    def _run_status(self, event: Event, body: RunStatus) -> None:
        """A run that ended lets go of everything its instances held: every store it still held is dropped."""
        self.status = body.status
        if body.status not in ENDED_RUN:
            return
        for store in self.stores.values():
            live = store.active()
            for held in live:
                held.active = False
            if live:
                what = f"dropped (run {body.status})"
                store.happenings.append(Happening(event.cursor, what, live[0].agent_id))

    def _turn(self, agent_id: str, body: Turn) -> None:
        if not agent_id:
            return
        previous = self.reports.get(agent_id)
        if previous is not None and previous.turn > body.turn:
            return
        by_store = {m.store_id: m.tokens for m in body.modules if m.store_id}
        by_kind = {m.kind: m.tokens for m in body.modules if not m.store_id}
        self.reports[agent_id] = TurnReport(body.turn, by_store, by_kind)

    # ---- stores and holders

    def _store(self, event: Event) -> Store | None:
        if not event.store_id or not event.agent_id:
            return None
        store = self.stores.get(event.store_id)
        if store is None:
            kind = event.kind or _kind_of_id(event.store_id)
            if kind is None:
                return None
            store = self.stores[event.store_id] = Store(event.store_id, kind, event.cursor)
        return store

    def _store_event(self, event: Event, store: Store) -> None:
        agent, body = event.agent_id, event.body
        self.instance(agent, event.cursor)
        match body:
            case Bind():
                self._bind(event, store, body)
            case Restate():
                self._restate(event, store, body)
            case Write():
                held = self._holding(store, agent, event.cursor)
                held.figures = body.figures
                store.figures, store.written = body.figures, True
                _take_contents(store, body.delta, agent)
                if body.op in HISTORY_BLOCK_OPS and isinstance(body.delta, HistoryContents):
                    # These writes carry the window's views and pins whole, after the operation.
                    store.open_views = {b.id: b.content for b in body.delta.open_views}
                    store.pinned_blocks = {b.id: b.content for b in body.delta.pinned_blocks}
                store.happenings.append(Happening(event.cursor, f"written ({body.op})", agent))
            case Snapshot():
                held = self._holding(store, agent, event.cursor)
                held.figures = store.figures = body.figures
                store.written = store.written or body.figures.writes > 0
                _take_contents(store, body.contents, agent)
            case Drain():
                held = self._holding(store, agent, event.cursor)
                held.active, held.figures = False, body.figures
                store.happenings.append(Happening(event.cursor, "drained", agent, body.successor_agent_id))

    def _holding(self, store: Store, agent: str, cursor: int, origin: Origin = Origin.UNSPECIFIED) -> Holding:
        """The agent's holding of the store; a stream that reports on a store it was never seen bound to
        holds it from here on (a log folded from its middle)."""
        held = store.holders.get(agent)
        if held is None:
            held = store.holders[agent] = Holding(agent, store.store_id, origin, True, cursor)
            store.peak = max(store.peak, len(store.active()))
        return held

    def _join(self, store: Store, held: Holding) -> None:
        store.holders[held.agent_id] = held
        store.peak = max(store.peak, len(store.active()))

    def _bind(self, event: Event, store: Store, body: Bind) -> None:
        agent = event.agent_id
        fresh = not store.holders and not store.happenings
        self._join(store, Holding(agent, store.store_id, body.origin, body.may_write, event.cursor))
        store.holders[agent].figures = body.figures
        store.figures = body.figures
        store.written = store.written or body.figures.writes > 0
        source = self.stores.get(body.source_store_id) if body.source_store_id else None
        if body.source_store_id and fresh:
            store.source_store_id = body.source_store_id
            if source is not None:
                _copy_contents(source, store, agent)
                source.happenings.append(Happening(event.cursor, f"copied to {store.store_id}", agent, agent))
            what = f"forked from {body.source_store_id}"
        else:
            what = "created" if fresh else f"shared ({body.origin.name.lower()})"
        store.happenings.append(Happening(event.cursor, what, agent, agent))

    def _restate(self, event: Event, store: Store, body: Restate) -> None:
        agent, pred = event.agent_id, body.predecessor_agent_id
        inst = self.instances[agent]
        row = inst.declared(store.kind)
        fresh = not store.holders and not store.happenings
        before = store.holders.get(pred) if pred else None
        continues = body.outcome == Outcome.CARRIED and before is not None
        origin = row.origin if row is not None and row.origin else Origin.TRANSFERRED
        may_write = row.may_write if row is not None else True
        held = Holding(agent, store.store_id, origin, may_write, event.cursor, continues=continues)
        held.figures = body.figures
        self._join(store, held)
        store.figures = body.figures
        store.written = store.written or body.figures.writes > 0
        _take_contents(store, body.contents, agent)
        if continues:
            what = "carried"
        elif fresh:
            what = "re-initialized" if body.outcome == Outcome.REINITIALIZED else "created"
        else:
            what = f"shared ({origin.name.lower()})"
        store.happenings.append(Happening(event.cursor, what, agent, agent))


def _add_once(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)


def _kind_of_id(store_id: str) -> Kind | None:
    word = store_id.rsplit("-", 1)[0]
    return next((k for k in Kind if k.word == word), None)


def _take_contents(store: Store, contents: Contents | None, agent: str) -> None:
    """History and archive accumulate what the writes added; other kinds keep the newest contents."""
    match contents:
        case None:
            return
        case HistoryContents():
            for m in contents.messages:
                store.messages[m.seq] = m
            if contents.system_prompt_set:
                store.system_prompt, store.system_prompt_set = contents.system_prompt, True
            store.turn = max(store.turn, contents.turn)
        case ArchiveContents():
            for t in contents.threads:
                store.threads[t.id] = t
        case _:
            store.contents = contents


def _copy_contents(source: Store, copy: Store, agent: str) -> None:
    """A fork starts from its source's contents: the window with its slot empty (R24), memories re-stamped
    with the copy's agent (R17)."""
    copy.messages = dict(source.messages)
    copy.open_views, copy.pinned_blocks = dict(source.open_views), dict(source.pinned_blocks)
    copy.turn = source.turn
    copy.threads = dict(source.threads)
    contents = source.contents
    if isinstance(contents, MemoriesContents):
        contents = replace(contents, entries=tuple(replace(e, agent_id=agent) for e in contents.entries))
    copy.contents = contents
    if copy.figures == Figures():
        copy.figures = source.figures
