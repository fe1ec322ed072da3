"""Between the contracts and the console model: events in (protobuf -> plain values), views out (plain
values -> `telemetry.v1` messages). No decisions are made here."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import TypeVar

from ggmodules.common.v1 import common_pb2, event_pb2, module_pb2
from ggmodules.core.console import events as ev
from ggmodules.core.console import views as v
from ggmodules.core.kinds import Kind
from ggmodules.core.modules import contents as c
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.values import IssueStatus, TaskStatus
from ggmodules.core.roster import RosterRow
from ggmodules.core.vocabulary import Cause, MemoryScope, MemoryStrategy, Origin, Outcome
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.wire.modulestore import contents_pb, figures_pb, kind_pb, origin_pb

E = TypeVar("E", bound=enum.IntEnum)

# ---- events in ---------------------------------------------------------------------------------------


def events_from(items: Sequence[tel.StreamEvent] | Sequence[event_pb2.Event]) -> list[ev.Event]:
    """Telemetry's stored events (their cursors kept), or bare events in log order (cursor = position,
    counting from 1). Events of a body the console does not read are left out."""
    out: list[ev.Event] = []
    for i, item in enumerate(items, start=1):
        if isinstance(item, tel.StreamEvent):
            converted = event_from(item.event, item.cursor)
        elif isinstance(item, event_pb2.Event):
            converted = event_from(item, i)
        else:
            continue
        if converted is not None:
            out.append(converted)
    return out


def event_from(e: event_pb2.Event, cursor: int) -> ev.Event | None:
    body = _body(e)
    if body is None:
        return None
    kind = _enum(Kind, e.kind) if e.kind else None
    return ev.Event(cursor, e.run_id, body, agent_id=e.agent_id, kind=kind, store_id=e.store_id)


def _body(e: event_pb2.Event) -> ev.Body | None:
    match e.WhichOneof("body"):
        case "roster":
            r = e.roster
            return ev.Roster(
                profile=r.profile,
                cause=_cause(r),
                rows=tuple(_row(x) for x in r.rows),
                parent_agent_id=r.parent_agent_id,
                predecessor_agent_id=r.predecessor_agent_id,
                opening_note=r.opening_note,
            )
        case "bind":
            b = e.bind
            return ev.Bind(_origin(b.origin), b.may_write, _figures(b.figures), b.source_store_id)
        case "write":
            w = e.write
            delta = contents_from(w.delta) if w.HasField("delta") else None
            return ev.Write(w.op, _figures(w.figures), delta)
        case "snapshot":
            s = e.snapshot
            contents = contents_from(s.contents) if s.HasField("contents") else None
            return ev.Snapshot(s.written_by, _figures(s.figures), contents)
        case "drain":
            return ev.Drain(e.drain.successor_agent_id, _figures(e.drain.figures))
        case "restate":
            r2 = e.restate
            contents = contents_from(r2.contents) if r2.HasField("contents") else None
            outcome = _enum(Outcome, r2.outcome) or Outcome.UNSPECIFIED
            return ev.Restate(outcome, r2.predecessor_agent_id, _figures(r2.figures), contents)
        case "run":
            return ev.RunStatus(e.run.status, e.run.detail)
        case "turn":
            modules = tuple(
                ev.ModuleTokens(kind, m.store_id, m.tokens)
                for m in e.turn.modules
                if (kind := _enum(Kind, m.kind)) is not None
            )
            return ev.Turn(e.turn.turn, modules)
    return None


def _enum(cls: type[E], value: int) -> E | None:
    try:
        return cls(value)
    except ValueError:
        return None


def _cause(r: event_pb2.RosterEvent) -> Cause:
    """The enum when the event carries it, else its word (events written before `instance_cause`); a reader
    never refuses an event, so a word naming no cause reads as UNSPECIFIED."""
    causes = tuple(Cause)
    if 0 < r.instance_cause < len(causes):
        return causes[r.instance_cause]
    return next((c for c in causes if c.word == r.cause), Cause.UNSPECIFIED)


def _origin(value: int) -> Origin:
    return _enum(Origin, value) or Origin.UNSPECIFIED


def _figures(f: module_pb2.ModuleFigures) -> Figures:
    return Figures(f.items, f.bytes, f.writes)


def _row(r: common_pb2.RosterRow) -> RosterRow:
    return RosterRow(
        kind=_enum(Kind, r.kind) or Kind.HISTORY,
        store_id=r.store_id,
        enabled=r.enabled,
        origin=_enum(Origin, r.origin) or Origin.UNSPECIFIED,
        scope=_enum(MemoryScope, r.scope) or MemoryScope.UNSPECIFIED,
        may_write=r.may_write,
        strategy=_enum(MemoryStrategy, r.strategy) or MemoryStrategy.UNSPECIFIED,
    )


def _messages(ms: Iterable[module_pb2.Message]) -> tuple[c.Message, ...]:
    return tuple(c.Message(m.seq, m.role, m.content, m.turn) for m in ms)


def contents_from(p: module_pb2.ModuleContents) -> c.Contents | None:
    match p.WhichOneof("contents"):
        case "history":
            h = p.history
            return c.HistoryContents(
                system_prompt=h.system_prompt,
                system_prompt_set=h.system_prompt_set,
                messages=_messages(h.messages),
                open_views=tuple(c.Block(b.id, b.content) for b in h.open_views),
                pinned_blocks=tuple(c.Block(b.id, b.content) for b in h.pinned_blocks),
                turn=h.turn,
                message_count=h.message_count,
            )
        case "memories":
            m = p.memories
            return c.MemoriesContents(
                _enum(MemoryStrategy, m.strategy) or MemoryStrategy.UNSPECIFIED,
                tuple(c.MemoryEntry(e.name, e.body, e.index_line, e.agent_id) for e in m.entries),
            )
        case "tasks":
            return c.TasksContents(
                tuple(
                    c.Task(t.id, t.title, t.description, _enum(TaskStatus, t.status) or TaskStatus.OPEN,
                           tuple(t.blocked_by))
                    for t in p.tasks.tasks
                ),
                p.tasks.next_id,
            )
        case "board":
            return c.BoardContents(
                tuple(
                    c.Issue(i.id, i.title, i.body, _enum(IssueStatus, i.status) or IssueStatus.OPEN)
                    for i in p.board.issues
                ),
                tuple((x.prefix, x.last) for x in p.board.counters),
            )
        case "skills":
            s = p.skills
            return c.SkillsContents(
                s.directory,
                tuple(c.Skill(k.name, k.description, k.body) for k in s.catalogue),
                tuple(s.read_set),
            )
        case "archive":
            return c.ArchiveContents(
                tuple(c.ArchivedThread(t.id, t.title, _messages(t.messages)) for t in p.archive.threads)
            )
    return None


# ---- views out ---------------------------------------------------------------------------------------


def cost_pb(cost: v.Cost) -> common_pb2.Cost:
    match cost.state:
        case v.CostState.MEASURED:
            return common_pb2.Cost(measured_tokens=cost.tokens)
        case v.CostState.NONE_BY_CONSTRUCTION:
            return common_pb2.Cost(none_by_construction=common_pb2.NoneByConstruction())
    return common_pb2.Cost(unmeasured=common_pb2.Unmeasured())


def figure_pb(f: v.Figure) -> tel.Figure:
    return tel.Figure(withheld=f.withheld) if f.count is None else tel.Figure(count=f.count)


def lifetime_pb(e: v.LifetimeEntry) -> tel.LifetimeEntry:
    return tel.LifetimeEntry(cursor=e.cursor, what=e.what, agent_id=e.agent_id, cause=e.cause)


def strip_pb(s: v.IdentityStrip) -> tel.IdentityStrip:
    return tel.IdentityStrip(
        store_id=s.store_id,
        kind=kind_pb(s.kind),
        origin=origin_pb(s.origin),
        may_write=s.may_write,
        lifetime=[lifetime_pb(e) for e in s.lifetime],
        cost_this_window=cost_pb(s.cost_this_window),
        cost_all_holders=cost_pb(s.cost_all_holders),
        co_holders=[tel.CoHolder(agent_id=h.agent_id, file=h.file) for h in s.co_holders],
        shared=s.shared,
        link_count=s.link_count,
        handed_on=s.handed_on,
        dropped=s.dropped,
        links_to_modules_view=s.links_to_modules_view,
    )


def _message_pb(m: c.Message) -> module_pb2.Message:
    return module_pb2.Message(seq=m.seq, role=m.role, content=m.content, turn=m.turn)


def module_file_pb(f: v.ModuleFile) -> tel.ModuleFile:
    out = tel.ModuleFile(
        path=f.path,
        strip=strip_pb(f.strip),
        turns=[tel.HistoryTurn(turn=t.turn, messages=[_message_pb(m) for m in t.messages]) for t in f.turns],
    )
    if f.figures is not None:
        out.figures.CopyFrom(figures_pb(f.figures))
    return out


def folder_pb(f: v.InstanceFolder) -> tel.InstanceFolder:
    return tel.InstanceFolder(
        agent_id=f.agent_id,
        profile=f.profile,
        cause=f.cause.word,
        files=list(f.files),
        modules=[module_file_pb(m) for m in f.modules],
        successors=list(f.successors),
        subagents=list(f.subagents),
        running=f.running,
        forks=list(f.forks),
    )


def store_row_pb(r: v.StoreRow) -> tel.StoreRow:
    return tel.StoreRow(
        store_id=r.store_id,
        kind=kind_pb(r.kind),
        holders=list(r.holders),
        running_holders=r.running_holders,
        shared=r.shared,
        link_count=r.link_count,
        handed_on=r.handed_on,
        dropped=r.dropped,
        written=r.written,
        cost=cost_pb(r.cost),
    )


def overview_pb(o: v.KindOverview) -> tel.KindOverview:
    return tel.KindOverview(
        kind=kind_pb(o.kind),
        store_count=o.store_count,
        holders=o.holders,
        running=o.running,
        shared_stores=o.shared_stores,
        widest_share=o.widest_share,
        cost_per_turn=cost_pb(o.cost_per_turn),
        never_written=figure_pb(o.never_written),
        stores=[store_row_pb(r) for r in o.stores],
    )


def detail_pb(d: v.StoreDetail) -> tel.StoreDetail:
    out = tel.StoreDetail(
        identity=strip_pb(d.identity),
        holders=[
            tel.HolderRow(
                agent_id=h.agent_id,
                origin=origin_pb(h.origin),
                may_write=h.may_write,
                active=h.active,
                cost=cost_pb(h.cost),
            )
            for h in d.holders
        ],
        lifetime=[lifetime_pb(e) for e in d.lifetime],
        summed_live_cost=cost_pb(d.summed_live_cost),
    )
    if d.contents is not None:
        out.contents.CopyFrom(contents_pb(d.contents))
    return out


def profile_pb(p: v.ProfileSection) -> tel.ProfileSection:
    rows = []
    for r in p.modules:
        row = tel.AgentModuleRow(
            kind=kind_pb(r.kind), badge=tel.Badge.ValueType(r.badge), store_ids=list(r.store_ids), note=r.note
        )
        if r.inline_contents is not None:
            row.inline_contents.CopyFrom(contents_pb(r.inline_contents))
        rows.append(row)
    return tel.ProfileSection(profile=p.profile, instances=list(p.instances), modules=rows)
