"""Generated messages to results. Pure functions; every conversion of a response lives here."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from google.protobuf import timestamp_pb2

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.modulestore.v1 import modulestore_pb2, modulestore_service_pb2
from ggmodules.registry.v1 import registry_pb2
from ggmodules.sdk import contents as mc
from ggmodules.sdk import results as r
from ggmodules.sdk.profiles import Capability, Edge, Fsm, Memories, Profile, Skills
from ggmodules.sdk.words import (
    IssueStatus,
    Kind,
    MemoryScope,
    MemoryStrategy,
    Origin,
    Outcome,
    RunStatus,
    SearchMode,
    TaskStatus,
    TransferKind,
    TransferState,
)
from ggmodules.transfer.v1 import transfer_pb2


def time(ts: timestamp_pb2.Timestamp) -> datetime | None:
    return ts.ToDatetime(tzinfo=UTC) if ts.seconds or ts.nanos else None


def caps(c: common_pb2.Caps) -> r.Caps:
    return r.Caps(max_items=c.max_items, max_bytes=c.max_bytes)


def figures(f: module_pb2.ModuleFigures) -> r.Figures:
    return r.Figures(items=f.items, bytes=f.bytes, writes=f.writes)


def roster_row(row: common_pb2.RosterRow) -> r.RosterRow:
    return r.RosterRow(
        kind=_kind(row.kind),
        store_id=row.store_id,
        enabled=row.enabled,
        origin=Origin.from_number(row.origin),
        may_write=row.may_write,
        scope=MemoryScope.from_number(row.scope),
        strategy=MemoryStrategy.from_number(row.strategy),
    )


def _kind(number: int) -> Kind:
    kind = Kind.from_number(number)
    if kind is None:
        raise ValueError(f"the service sent kind number {number}, which is not one of the six")
    return kind


def _common(c: registry_pb2.ModuleConfig) -> dict[str, Any]:
    return {"read_only": c.read_only, "max_items": c.caps.max_items, "max_bytes": c.caps.max_bytes}


def capability(c: registry_pb2.ModuleConfig | None) -> Capability | bool:
    return c is not None and c.enabled and Capability(**_common(c))


def memories(c: registry_pb2.ModuleConfig | None) -> Memories | bool:
    return c is not None and c.enabled and Memories(
        strategy=MemoryStrategy.from_number(c.strategy) or MemoryStrategy.SCRATCHPAD,
        scope=MemoryScope.from_number(c.scope) or MemoryScope.INSTANCE, **_common(c))


def skills(c: registry_pb2.ModuleConfig | None) -> Skills | bool:
    return c is not None and c.enabled and Skills(directory=c.skills_directory, **_common(c))


def profile(p: registry_pb2.Profile) -> Profile:
    named = dict(p.modules)
    history = named.pop("history", None)
    return Profile(
        p.name,
        history=True if history is None else capability(history),
        memories=memories(named.pop("memories", None)),
        tasks=capability(named.pop("tasks", None)),
        skills=skills(named.pop("skills", None)),
        archive=capability(named.pop("archive", None)),
        modules={word: capability(c) for word, c in named.items()},
    )


def fsm(f: registry_pb2.FsmDefinition) -> Fsm:
    return Fsm(
        initial=f.initial,
        states={s.name: s.profile for s in f.states},
        edges=tuple(Edge(getattr(e, "from"), e.to, tuple(e.carry)) for e in f.edges),
    )


def run(pb: registry_pb2.Run) -> r.Run:
    return r.Run(
        id=pb.run_id,
        name=pb.name,
        profiles=tuple(profile(p) for p in pb.profiles),
        board=pb.board_enabled,
        status=RunStatus.from_number(pb.status),
        status_detail=pb.status_detail,
        fsm=fsm(pb.fsm) if pb.HasField("fsm") and pb.fsm.initial else None,
        created_at=time(pb.create_time),
    )


def instance(pb: registry_pb2.Instance) -> r.Instance:
    return r.Instance(
        run_id=pb.run_id,
        agent_id=pb.agent_id,
        profile=pb.profile,
        cause=pb.cause,
        roster=tuple(roster_row(row) for row in pb.roster),
        parent_agent_id=pb.parent_agent_id,
        predecessor_agent_id=pb.predecessor_agent_id,
        fsm_state=pb.fsm_state,
        created_at=time(pb.create_time),
        successor_agent_id=pb.successor_agent_id,
        opening_note=pb.opening_note,
    )


def message(m: module_pb2.Message) -> mc.Message:
    return mc.Message(seq=m.seq, role=m.role, content=m.content, turn=m.turn)


def thread(t: module_pb2.ArchivedThread) -> mc.ArchivedThread:
    return mc.ArchivedThread(id=t.id, title=t.title, messages=tuple(message(m) for m in t.messages))


def search_page(resp: modulestore_service_pb2.SearchArchiveResponse) -> r.SearchPage:
    found = tuple(
        mc.FoundThread(id=t.id, title=t.title, messages=tuple(message(m) for m in t.messages), score=h.score,
                      snippet=h.snippet)
        for t, h in zip(resp.threads, resp.hits, strict=True)
    )
    mode = SearchMode.from_number(resp.mode)
    return r.SearchPage(found, resp.next_page_token, mode=mode or SearchMode.TEXT)


def contents(c: module_pb2.ModuleContents) -> mc.Contents | None:
    which = c.WhichOneof("contents")
    if which == "history":
        h = c.history
        return mc.HistoryContents(
            system_prompt=h.system_prompt if h.system_prompt_set else None,
            messages=tuple(message(m) for m in h.messages),
            open_views=tuple(mc.Block(b.id, b.content) for b in h.open_views),
            pinned_blocks=tuple(mc.Block(b.id, b.content) for b in h.pinned_blocks),
            turn=h.turn,
            message_count=h.message_count,
        )
    if which == "memories":
        return mc.MemoriesContents(
            strategy=MemoryStrategy.from_number(c.memories.strategy),
            entries=tuple(mc.MemoryEntry(e.name, e.body, e.agent_id, e.index_line)
                          for e in c.memories.entries),
        )
    if which == "tasks":
        return mc.TasksContents(
            tasks=tuple(mc.Task(t.id, t.title, TaskStatus.from_number(t.status), t.description,
                               tuple(t.blocked_by)) for t in c.tasks.tasks),
            next_id=c.tasks.next_id,
        )
    if which == "board":
        return mc.BoardContents(
            issues=tuple(mc.Issue(i.id, i.title, IssueStatus.from_number(i.status), i.body)
                         for i in c.board.issues),
            counters={p.prefix: p.last for p in c.board.counters},
        )
    if which == "skills":
        return mc.SkillsContents(
            directory=c.skills.directory,
            catalogue=tuple(mc.Skill(s.name, s.description, s.body) for s in c.skills.catalogue),
            read_set=tuple(c.skills.read_set),
        )
    if which == "archive":
        return mc.ArchiveContents(threads=tuple(thread(t) for t in c.archive.threads))
    return None


def store(s: modulestore_pb2.Store, with_contents: module_pb2.ModuleContents | None = None) -> r.Store:
    return r.Store(
        run_id=s.run_id,
        id=s.store_id,
        kind=Kind.from_number(s.kind),
        caps=caps(s.caps),
        holders=tuple(r.Holder(h.agent_id, Origin.from_number(h.origin), h.may_write, h.active)
                      for h in s.holders),
        figures=figures(s.figures),
        forked_from=s.forked_from,
        strategy=MemoryStrategy.from_number(s.strategy),
        skills_directory=s.skills_directory,
        contents=contents(with_contents) if with_contents is not None else None,
    )


def write_result(w: Any) -> r.WriteResult:
    return r.WriteResult(
        store_id=w.store_id,
        figures=figures(w.figures),
        task_id=w.task_id,
        issue_id=w.issue_id,
        thread_id=w.thread_id,
        last_seq=w.last_seq,
        turn=w.turn,
    )


def contribution(c: modulestore_pb2.Contribution) -> r.Contribution:
    return r.Contribution(
        kind=Kind.from_number(c.kind),
        store_id=c.store_id,
        contributes_nothing=c.contributes_nothing,
        messages=tuple(r.PromptMessage(m.role, m.content, m.section) for m in c.messages),
    )


def tool(t: modulestore_pb2.ToolDefinition) -> r.ToolDefinition:
    return r.ToolDefinition(Kind.from_number(t.kind), t.name, t.description, t.parameters_json_schema)


def kind_outcome(o: common_pb2.KindOutcome) -> r.KindOutcome:
    return r.KindOutcome(
        kind=_kind(o.kind),
        outcome=Outcome.from_number(o.outcome),
        store_id_before=o.store_id_before,
        store_id_after=o.store_id_after,
        note=o.note,
    )


def transfer(t: transfer_pb2.Transfer, *, kept_state: str = "") -> r.Transfer[Any]:
    """`kept_state`: the predecessor's FSM state, which an exec successor keeps, when the caller knows it."""
    kind = TransferKind.from_number(t.kind)
    return r.Transfer(
        transfer_id=t.transfer_id,
        request_id=t.request_id,
        run_id=t.run_id,
        kind=kind,
        state=TransferState.from_number(t.state),
        predecessor_agent_id=t.predecessor_agent_id,
        successor_agent_id=t.successor_agent_id,
        successor_profile=t.successor_profile,
        outcomes=tuple(kind_outcome(o) for o in t.outcomes),
        roster=tuple(roster_row(row) for row in t.roster),
        opening_note=t.opening_note,
        failure=t.failure,
        from_state=t.from_state,
        to_state=t.to_state,
        created_at=time(t.create_time),
        completed_at=time(t.complete_time),
        successor_fsm_state=t.to_state or kept_state,
    )
