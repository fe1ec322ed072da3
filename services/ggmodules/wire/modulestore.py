"""Between the contracts (generated messages) and the module domain. No decisions are made here."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from typing import TypeVar

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.core.errors import InvalidArgument, missing
from ggmodules.core.kinds import Kind, kind_from_value
from ggmodules.core.modules import contents as c
from ggmodules.core.modules import ops
from ggmodules.core.modules.archive_search import SearchMode, SearchPage
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.handover import HandoverKind, HandoverPlan, KindResult, Receive
from ggmodules.core.modules.prompt import Contribution
from ggmodules.core.modules.tools.catalog import ToolDefinition
from ggmodules.core.modules.tools.dispatch import Result
from ggmodules.core.modules.values import IssueStatus, TaskStatus
from ggmodules.core.modules.views import StoreInfo, StoreView, WriteResult
from ggmodules.core.roster import Binding, BindPlan, Caps, RosterRow
from ggmodules.core.vocabulary import (
    BindAction,
    MemoryScope,
    MemoryStrategy,
    Origin,
    Outcome,
    cause_from_word,
)
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.wire.modulestore_fill import fill_figures, fill_history

# ---- requests -> domain ------------------------------------------------------------------------------


E = TypeVar("E", bound=enum.IntEnum)


def _enum(cls: type[E], value: int, field: str) -> E:
    try:
        return cls(value)
    except ValueError:
        valid = ", ".join(str(int(v)) for v in cls)
        raise InvalidArgument(
            f"{field}: {value} is not a valid value (valid: {valid})",
            metadata={"field": field},
            violations=[(field, "unknown enum value")],
        ) from None


def caps_from(p: common_pb2.Caps) -> Caps:
    if p.max_items < 0 or p.max_bytes < 0:
        raise InvalidArgument("caps must not be negative (0 means unlimited)", metadata={"field": "caps"})
    return Caps(p.max_items, p.max_bytes)


def plan_from(req: svc.BindInstanceRequest) -> BindPlan:
    bindings = []
    for i, b in enumerate(req.bindings):
        field = f"bindings[{i}]"
        kind = kind_from_value(b.kind, field=f"{field}.kind")
        if b.action == ms.BIND_ACTION_UNSPECIFIED:
            raise missing(f"{field}.action")
        bindings.append(
            Binding(
                kind=kind,
                action=_enum(BindAction, b.action, f"{field}.action"),
                source_store_id=b.source_store_id,
                named_key=b.named_key,
                origin=_enum(Origin, b.origin, f"{field}.origin") if b.origin else Origin.UNSPECIFIED,
                may_write=b.may_write,
                caps=caps_from(b.caps),
                strategy=_enum(MemoryStrategy, b.strategy, f"{field}.strategy"),
                scope=_enum(MemoryScope, b.scope, f"{field}.scope"),
                skills_directory=b.skills_directory,
                read_set_source_agent_id=b.read_set_source_agent_id,
            )
        )
    return BindPlan(
        cause=cause_from_word(req.cause),
        profile=req.profile,
        parent_agent_id=req.parent_agent_id,
        bindings=tuple(bindings),
        run_id=req.run_id,
        agent_id=req.agent_id,
    )


def handover_from(req: svc.HandoverRequest) -> HandoverPlan:
    kinds = []
    for i, k in enumerate(req.kinds):
        field = f"kinds[{i}]"
        kind = kind_from_value(k.kind, field=f"{field}.kind")
        outcome = _enum(Outcome, k.outcome, f"{field}.outcome")
        receive = None
        if k.HasField("binding") and outcome != Outcome.DROPPED:
            p, bf = k.binding, f"{field}.binding"
            receive = Receive(
                action=_enum(BindAction, p.action, f"{bf}.action") if p.action else None,
                named_key=p.named_key,
                origin=_enum(Origin, p.origin, f"{bf}.origin") if p.origin else Origin.UNSPECIFIED,
                may_write=p.may_write,
                caps=caps_from(p.caps),
                strategy=_enum(MemoryStrategy, p.strategy, f"{bf}.strategy"),
                scope=_enum(MemoryScope, p.scope, f"{bf}.scope"),
                skills_directory=p.skills_directory,
                source_store_id=p.source_store_id,
            )
        kinds.append(HandoverKind(kind, outcome, receive, k.note))
    return HandoverPlan(
        req.run_id,
        req.predecessor_agent_id,
        req.successor_agent_id,
        req.profile,
        cause_from_word(req.cause),
        tuple(kinds),
        req.opening_note,
    )


def _inputs(messages: Iterable[ms.MessageInput]) -> tuple[c.MessageInput, ...]:
    return tuple(c.MessageInput(m.role, m.content) for m in messages)


def op_from(req: svc.WriteRequest) -> ops.Op:
    which = req.WhichOneof("op")
    match which:
        case "append_messages":
            return ops.AppendMessages(_inputs(req.append_messages.messages), req.append_messages.start_turn)
        case "set_system_prompt":
            return ops.SetSystemPrompt(req.set_system_prompt.text)
        case "open_view":
            return ops.OpenView(req.open_view.view_id, req.open_view.content)
        case "close_view":
            return ops.CloseView(req.close_view.view_id)
        case "pin_block":
            return ops.PinBlock(req.pin_block.block_id, req.pin_block.content)
        case "unpin_block":
            return ops.UnpinBlock(req.unpin_block.block_id)
        case "write_pad":
            return ops.WritePad(req.write_pad.text)
        case "write_file":
            return ops.WriteFile(req.write_file.name, req.write_file.body, req.write_file.index_line)
        case "delete_file":
            return ops.DeleteFile(req.delete_file.name)
        case "create_task":
            t = req.create_task
            return ops.CreateTask(t.title, t.description, tuple(t.blocked_by))
        case "update_task":
            u = req.update_task
            return ops.UpdateTask(
                u.task_id,
                _enum(TaskStatus, u.status, "update_task.status") if u.status else None,
                tuple(u.add_blocked_by),
                tuple(u.remove_blocked_by),
            )
        case "create_issue":
            i = req.create_issue
            return ops.CreateIssue(i.prefix, i.title, i.body)
        case "update_issue":
            u2 = req.update_issue
            return ops.UpdateIssue(
                u2.issue_id,
                _enum(IssueStatus, u2.status, "update_issue.status") if u2.status else None,
                u2.body,
            )
        case "put_skill":
            s = req.put_skill
            return ops.PutSkill(s.name, s.description, s.body)
        case "read_skill":
            return ops.ReadSkill(req.read_skill.name)
        case "archive_thread":
            return ops.ArchiveThread(req.archive_thread.title, _inputs(req.archive_thread.messages))
    raise missing("op")


def optional_kind(value: int) -> Kind | None:
    return None if value == 0 else kind_from_value(value)


_MODES: dict[int, SearchMode] = {
    ms.SEARCH_MODE_TEXT: SearchMode.TEXT,
    ms.SEARCH_MODE_SEMANTIC: SearchMode.SEMANTIC,
    ms.SEARCH_MODE_HYBRID: SearchMode.HYBRID,
}
_MODE_PB = {mode: value for value, mode in _MODES.items()}


def search_mode(value: int) -> SearchMode:
    if value == ms.SEARCH_MODE_UNSPECIFIED:
        return SearchMode.TEXT
    if value not in _MODES:
        raise InvalidArgument(
            f"mode: {value} is not a search mode (valid: {', '.join(str(int(v)) for v in _MODES)})",
            metadata={"field": "mode"},
            violations=[("mode", "unknown enum value")],
        )
    return _MODES[value]


# ---- domain -> responses -----------------------------------------------------------------------------


def kind_pb(kind: int) -> common_pb2.Kind.ValueType:
    return common_pb2.Kind.ValueType(kind)


def origin_pb(origin: int) -> common_pb2.Origin.ValueType:
    return common_pb2.Origin.ValueType(origin)


def strategy_pb(strategy: int) -> common_pb2.MemoryStrategy.ValueType:
    return common_pb2.MemoryStrategy.ValueType(strategy)


def figures_pb(f: Figures) -> module_pb2.ModuleFigures:
    return module_pb2.ModuleFigures(items=f.items, bytes=f.bytes, writes=f.writes)


def caps_pb(caps: Caps) -> common_pb2.Caps:
    return common_pb2.Caps(max_items=caps.max_items, max_bytes=caps.max_bytes)


def roster_row_pb(r: RosterRow) -> common_pb2.RosterRow:
    return common_pb2.RosterRow(
        kind=kind_pb(r.kind),
        store_id=r.store_id,
        enabled=r.enabled,
        origin=origin_pb(r.origin or 0),
        scope=common_pb2.MemoryScope.ValueType(r.scope),
        may_write=r.may_write,
        strategy=strategy_pb(r.strategy),
    )


def message_pb(m: c.Message) -> module_pb2.Message:
    return module_pb2.Message(seq=m.seq, role=m.role, content=m.content, turn=m.turn)


def thread_pb(t: c.ArchivedThread) -> module_pb2.ArchivedThread:
    return module_pb2.ArchivedThread(id=t.id, title=t.title, messages=[message_pb(m) for m in t.messages])


def search_response(page: SearchPage) -> svc.SearchArchiveResponse:
    return svc.SearchArchiveResponse(
        threads=[thread_pb(h.thread) for h in page.hits],
        hits=[ms.ArchiveHit(thread_id=h.thread.id, score=h.score, snippet=h.snippet) for h in page.hits],
        next_page_token=page.next_page_token,
        mode=ms.SearchMode.ValueType(_MODE_PB[page.mode]),
    )


def contents_pb(contents: c.Contents) -> module_pb2.ModuleContents:
    match contents:
        case c.HistoryContents():
            pb = module_pb2.ModuleContents()
            fill_history(pb.history, contents)
            return pb
        case c.MemoriesContents():
            return module_pb2.ModuleContents(
                memories=module_pb2.MemoriesContents(
                    strategy=strategy_pb(contents.strategy),
                    entries=[
                        module_pb2.MemoryEntry(
                            name=e.name, body=e.body, index_line=e.index_line, agent_id=e.agent_id
                        )
                        for e in contents.entries
                    ],
                )
            )
        case c.TasksContents():
            return module_pb2.ModuleContents(
                tasks=module_pb2.TasksContents(
                    tasks=[
                        module_pb2.Task(
                            id=t.id,
                            title=t.title,
                            description=t.description,
                            status=module_pb2.TaskStatus.ValueType(t.status),
                            blocked_by=t.blocked_by,
                        )
                        for t in contents.tasks
                    ],
                    next_id=contents.next_id,
                )
            )
        case c.BoardContents():
            return module_pb2.ModuleContents(
                board=module_pb2.BoardContents(
                    issues=[
                        module_pb2.Issue(
                            id=i.id,
                            title=i.title,
                            body=i.body,
                            status=module_pb2.IssueStatus.ValueType(i.status),
                        )
                        for i in contents.issues
                    ],
                    counters=[module_pb2.PrefixCounter(prefix=p, last=n) for p, n in contents.counters],
                )
            )
        case c.SkillsContents():
            return module_pb2.ModuleContents(
                skills=module_pb2.SkillsContents(
                    directory=contents.directory,
                    catalogue=[
                        module_pb2.Skill(name=s.name, description=s.description, body=s.body)
                        for s in contents.catalogue
                    ],
                    read_set=contents.read_set,
                )
            )
        case c.ArchiveContents():
            return module_pb2.ModuleContents(
                archive=module_pb2.ArchiveContents(threads=[thread_pb(t) for t in contents.threads])
            )


def store_pb(s: StoreInfo) -> ms.Store:
    return ms.Store(
        run_id=s.run_id,
        store_id=s.store_id,
        kind=kind_pb(s.kind),
        caps=caps_pb(s.caps),
        holders=[
            ms.Holder(agent_id=h.agent_id, origin=origin_pb(h.origin), may_write=h.may_write, active=h.active)
            for h in s.holders
        ],
        figures=figures_pb(s.figures),
        forked_from=s.forked_from,
        strategy=strategy_pb(s.strategy),
        skills_directory=s.skills_directory,
    )


def bind_response(rows: list[RosterRow]) -> svc.BindInstanceResponse:
    return svc.BindInstanceResponse(roster=[roster_row_pb(r) for r in rows])


def kind_outcome_pb(r: KindResult) -> common_pb2.KindOutcome:
    return common_pb2.KindOutcome(
        kind=kind_pb(r.kind),
        outcome=common_pb2.Outcome.ValueType(r.outcome),
        store_id_before=r.store_id_before,
        store_id_after=r.store_id_after,
        note=r.note,
    )


def handover_response(rows: list[RosterRow], results: list[KindResult]) -> svc.HandoverResponse:
    return svc.HandoverResponse(
        roster=[roster_row_pb(r) for r in rows], outcomes=[kind_outcome_pb(r) for r in results]
    )


def write_response(r: WriteResult) -> svc.WriteResponse:
    response = svc.WriteResponse(
        store_id=r.store_id,
        task_id=r.task_id,
        issue_id=r.issue_id,
        thread_id=r.thread_id,
        last_seq=r.last_seq,
        turn=r.turn,
    )
    fill_figures(response.figures, r.figures)
    return response


def store_response(v: StoreView) -> svc.GetStoreResponse:
    return svc.GetStoreResponse(store=store_pb(v.store), contents=contents_pb(v.contents))


def contribution_pb(x: Contribution) -> ms.Contribution:
    return ms.Contribution(
        kind=kind_pb(x.kind),
        store_id=x.store_id,
        contributes_nothing=x.contributes_nothing,
        messages=[ms.PromptMessage(role=m.role, content=m.content, section=m.section) for m in x.messages],
    )


def tool_pb(t: ToolDefinition) -> ms.ToolDefinition:
    return ms.ToolDefinition(
        kind=kind_pb(t.kind), name=t.name, description=t.description, parameters_json_schema=t.schema_json()
    )


def tool_response(result: Result) -> svc.CallToolResponse:
    return svc.CallToolResponse(result_json=json.dumps(result, ensure_ascii=False, separators=(",", ":")))
