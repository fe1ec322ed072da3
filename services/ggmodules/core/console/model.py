"""The console model: the folded log read at three grains (R37-R46). Every view is computed from the
folded state alone, so folding the same events again gives the same views."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby

from ggmodules.core.console import badges, reading
from ggmodules.core.console.events import Event
from ggmodules.core.console.fold import Folded
from ggmodules.core.console.state import Holding, Instance, Store
from ggmodules.core.console.views import (
    AGENT_FILES,
    HISTORY_HOLDING_NOTHING,
    AgentModuleRow,
    AgentsView,
    Badge,
    Figure,
    HistoryTurn,
    HolderRow,
    InstanceFolder,
    InstancesView,
    KindOverview,
    ModuleFile,
    ModulesView,
    ProfileSection,
    StoreDetail,
    StoreRow,
)
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import (
    ArchiveContents,
    Block,
    BoardContents,
    Contents,
    HistoryContents,
    MemoriesContents,
    SkillsContents,
    TasksContents,
)
from ggmodules.core.vocabulary import MemoryStrategy


class ConsoleModel:
    def __init__(self) -> None:
        self.folded = Folded()

    @property
    def cursor(self) -> int:
        return self.folded.cursor

    @property
    def run_id(self) -> str:
        return self.folded.run_id

    def apply(self, events: Iterable[Event]) -> ConsoleModel:
        """Folds events newer than the last one folded, in cursor order."""
        for event in sorted(events, key=lambda e: e.cursor):
            self.folded.apply(event)
        return self

    # ---- Instances (R37-R41)

    def instances(self) -> InstancesView:
        f = self.folded
        offered = reading.modules_view(f)
        folders = [self._folder(inst, offered) for inst in self._rostered_first()]
        return InstancesView(tuple(folders), offered, f.cursor)

    def _rostered_first(self) -> list[Instance]:
        return sorted(self.folded.instances.values(), key=lambda i: i.first_cursor)

    def _folder(self, inst: Instance, offered: bool) -> InstanceFolder:
        f = self.folded
        files = tuple(self._module_file(store, held, offered) for store, held in reading.held_by(f, inst))
        return InstanceFolder(
            agent_id=inst.agent_id,
            profile=inst.profile,
            cause=inst.cause,
            files=AGENT_FILES,
            modules=files,
            successors=tuple(inst.successors),
            subagents=tuple(inst.subagents),
            running=reading.running(f, inst.agent_id),
            forks=tuple(inst.forks),
        )

    def _module_file(self, store: Store, held: Holding, offered: bool) -> ModuleFile:
        strip = reading.strip(self.folded, store, held, offered)
        path = reading.module_path(store.kind)
        if store.kind == Kind.HISTORY:
            return ModuleFile(path, strip, turns=_turns(store))
        return ModuleFile(path, strip, figures=held.figures or store.figures)

    # ---- Modules (R42, R43)

    def modules(self) -> ModulesView:
        f = self.folded
        offered = reading.modules_view(f)
        if not offered:
            return ModulesView((), False, f.cursor)
        overviews = []
        for kind in Kind:
            stores = self._stores_of(kind)
            if stores:
                overviews.append(self._overview(kind, stores))
        return ModulesView(tuple(overviews), True, f.cursor)

    def _stores_of(self, kind: Kind) -> list[Store]:
        return sorted((s for s in self.folded.stores.values() if s.kind == kind), key=lambda s: s.number)

    def _overview(self, kind: Kind, stores: list[Store]) -> KindOverview:
        f = self.folded
        rows = tuple(self._store_row(s) for s in stores)
        live = [reading.holder_cost(f, s, h) for s in stores for h in s.active()]
        shared = [r for r in rows if r.shared]
        never = (
            Figure(withheld=HISTORY_HOLDING_NOTHING)
            if kind == Kind.HISTORY
            else Figure(count=sum(1 for r in rows if not r.written))
        )
        return KindOverview(
            kind=kind,
            store_count=len(rows),
            holders=sum(len(r.holders) for r in rows),
            running=sum(r.running_holders for r in rows),
            shared_stores=len(shared),
            widest_share=max((r.link_count for r in shared), default=0),
            cost_per_turn=reading.summed(live, kind),
            never_written=never,
            stores=rows,
        )

    def _store_row(self, store: Store) -> StoreRow:
        f = self.folded
        return StoreRow(
            store_id=store.store_id,
            kind=store.kind,
            holders=tuple(store.holders),
            running_holders=reading.running_holders(f, store),
            shared=reading.shared(store),
            link_count=reading.link_count(store),
            handed_on=reading.handed_on(store),
            dropped=reading.dropped(store),
            written=reading.written(store),
            cost=reading.live_cost(f, store),
        )

    # ---- Store detail (R44)

    def store_detail(self, store_id: str) -> StoreDetail | None:
        f = self.folded
        store = f.stores.get(store_id)
        if store is None:
            return None
        holders = tuple(
            HolderRow(h.agent_id, h.origin, h.may_write, h.active, reading.holder_cost(f, store, h))
            for h in store.holders.values()
        )
        return StoreDetail(
            identity=reading.strip(f, store, None, reading.modules_view(f)),
            holders=holders,
            lifetime=reading.lifetime(f, store),
            summed_live_cost=reading.live_cost(f, store),
            contents=contents_of(store, _strategy(f, store)),
            cursor=f.cursor,
        )

    # ---- Agents (R45, R46)

    def agents(self) -> AgentsView:
        f = self.folded
        by_profile: dict[str, list[Instance]] = {}
        for inst in self._rostered_first():
            if inst.roster is not None:
                by_profile.setdefault(inst.profile, []).append(inst)
        sections = tuple(self._section(p, insts) for p, insts in by_profile.items())
        return AgentsView(sections, f.cursor)

    def _section(self, profile: str, instances: list[Instance]) -> ProfileSection:
        f = self.folded
        ids = {i.agent_id for i in instances}
        rows = []
        for kind in Kind:
            stores = [s for s in self._stores_of(kind) if ids & s.holders.keys()]
            if not stores:
                continue
            b = badges.badge(f, profile, kind, stores)
            inline = contents_of(stores[0], _strategy(f, stores[0])) if b is Badge.AGENT_SCOPED else None
            rows.append(
                AgentModuleRow(
                    kind=kind,
                    badge=b,
                    store_ids=tuple(s.store_id for s in stores),
                    inline_contents=inline,
                    note=badges.note(f, instances, kind, stores),
                )
            )
        return ProfileSection(profile, tuple(i.agent_id for i in instances), tuple(rows))


def fold(events: Iterable[Event]) -> ConsoleModel:
    """The console model of a run's events (any order; each cursor folded once)."""
    return ConsoleModel().apply(events)


def contents_of(store: Store, strategy: MemoryStrategy = MemoryStrategy.UNSPECIFIED) -> Contents:
    """From the store's own snapshot; history and archive from what their holders' streams carried. A store
    nothing has been written to holds its kind's empty contents (memories under `strategy`), not nothing."""
    if store.kind == Kind.HISTORY:
        messages = tuple(store.messages[k] for k in sorted(store.messages))
        return HistoryContents(
            system_prompt=store.system_prompt,
            system_prompt_set=store.system_prompt_set,
            messages=messages,
            open_views=tuple(Block(k, v) for k, v in store.open_views.items()),
            pinned_blocks=tuple(Block(k, v) for k, v in store.pinned_blocks.items()),
            turn=store.turn,
            message_count=max(store.messages, default=0),
        )
    if store.kind == Kind.ARCHIVE:
        return ArchiveContents(tuple(store.threads[k] for k in sorted(store.threads)))
    if store.contents is not None:
        return store.contents
    match store.kind:
        case Kind.MEMORIES:
            return MemoriesContents(strategy)
        case Kind.TASKS:
            return TasksContents()
        case Kind.BOARD:
            return BoardContents()
        case _:
            return SkillsContents()


def _strategy(folded: Folded, store: Store) -> MemoryStrategy:
    """The memories strategy a holder's roster declared for the store."""
    for agent_id in store.holders:
        inst = folded.instances.get(agent_id)
        row = inst.declared(store.kind) if inst is not None else None
        if row is not None and row.store_id == store.store_id:
            return row.strategy
    return MemoryStrategy.UNSPECIFIED


def _turns(store: Store) -> tuple[HistoryTurn, ...]:
    messages = [store.messages[k] for k in sorted(store.messages)]
    return tuple(HistoryTurn(turn, tuple(ms)) for turn, ms in groupby(messages, key=lambda m: m.turn))
