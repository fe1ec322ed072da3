"""The console's three views of a run for a terminal, drawn with `rich` from the Inspect RPCs' answers:
Instances as a tree per instance, Modules and Agents as tables. Section titles are `== Title ==` lines, so
the text also reads (and greps) without a terminal."""

from __future__ import annotations

import io
from collections.abc import Iterable

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ggmodules.common.v1 import common_pb2
from ggmodules.core.console.views import Badge
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.web.telemetry import RunViews

LINK = "🔗"


def kind_word(kind: int) -> str:
    if not kind:
        return "?"
    return common_pb2.Kind.Name(common_pb2.Kind.ValueType(kind)).removeprefix("KIND_").lower()


def origin_word(origin: int) -> str:
    if not origin:
        return "unknown"
    return common_pb2.Origin.Name(common_pb2.Origin.ValueType(origin)).removeprefix("ORIGIN_").lower()


def cost_text(cost: common_pb2.Cost) -> str:
    """Measured (zero included), unmeasured, none by construction: never conflated (R43)."""
    match cost.WhichOneof("value"):
        case "measured_tokens":
            return f"{cost.measured_tokens} tokens"
        case "none_by_construction":
            return "none by construction"
    return "unmeasured"


def render(run_id: str, views: RunViews) -> RenderableType:
    """Instances, Modules (only where the run has that view, R41) and Agents."""
    parts: list[RenderableType] = [
        _text(f"run {run_id}  (cursor {views.instances.cursor})", "bold"),
        _title("Instances"),
        *instances(views.instances),
    ]
    if views.modules.modules_view:
        parts += [_title("Modules"), *modules(views.modules.kinds)]
    parts += [_title("Agents"), *agents(views.agents.profiles)]
    return Group(*parts)


def render_text(run_id: str, views: RunViews, width: int = 200) -> str:
    """The views as plain text (no colour), as `--once` prints them when stdout is not a terminal."""
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False).print(render(run_id, views))
    return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())


def _title(name: str) -> Text:
    return Text(f"== {name} ==", style="bold cyan")


def _marks(shared: bool, link_count: int, handed_on: bool, dropped: bool) -> list[str]:
    out = [f"{LINK} {link_count}"] if shared else []
    out += ["handed on"] if handed_on else []
    out += ["dropped"] if dropped else []
    return out


# ---- Instances -----------------------------------------------------------------------------------------


def instances(view: pb.InspectInstancesResponse) -> list[RenderableType]:
    return [_folder(f) for f in view.instances]


def _folder(f: tel.InstanceFolder) -> Tree:
    state = "running" if f.running else "stopped"
    title = _text(f.agent_id, "bold").append_text(_text(f"  [{f.profile or '?'}, {f.cause or '?'}, {state}]"))
    tree = Tree(title)
    tree.add(_text("  ".join(f.files), "dim"))
    folder = tree.add(_text("modules/"))
    for m in f.modules:
        _module_file(folder, m)
    for label, ids in (("forks", f.forks), ("successors", f.successors), ("subagents", f.subagents)):
        if ids:
            tree.add(_text(f"{label}: {', '.join(ids)}"))
    return tree


def _module_file(folder: Tree, m: tel.ModuleFile) -> None:
    s = m.strip
    marks = _marks(s.shared, s.link_count, s.handed_on, s.dropped)
    line = (
        f"{m.path.removeprefix('modules/'):<9} {s.store_id}  {origin_word(s.origin)} "
        f"{'rw' if s.may_write else 'ro'}  cost this window: {cost_text(s.cost_this_window)}  "
        f"all holders: {cost_text(s.cost_all_holders)}" + (f"  {' · '.join(marks)}" if marks else "")
    )
    node = folder.add(_text(line))
    if s.co_holders:
        node.add(_text("co-holders: " + ", ".join(f"{c.agent_id}:{c.file}" for c in s.co_holders)))
    if s.lifetime:
        last = s.lifetime[-1]
        cause = f" ({last.cause})" if last.cause else ""
        count = f"{len(s.lifetime)} entr{'y' if len(s.lifetime) == 1 else 'ies'}"
        node.add(_text(f"lifetime: {count}; last {last.what} by {last.agent_id}{cause}"))
    for t in m.turns:
        for msg in t.messages:
            node.add(_text(f"turn {t.turn} #{msg.seq} {msg.role}: {_short(msg.content)}"))
    if m.HasField("figures"):
        fg = m.figures
        node.add(_text(f"{fg.items} items   {fg.bytes} bytes   {fg.writes} writes"))


# ---- Modules -------------------------------------------------------------------------------------------


def modules(kinds: Iterable[tel.KindOverview]) -> list[RenderableType]:
    return [_overview(o) for o in kinds]


def _overview(o: tel.KindOverview) -> Group:
    never = str(o.never_written.count) if o.never_written.WhichOneof("value") == "count" else "withheld"
    title = (
        f"{kind_word(o.kind)}: {o.store_count} stores · {o.holders} holders · {o.running} running · "
        f"{o.shared_stores} shared (widest {o.widest_share}) · cost/turn {cost_text(o.cost_per_turn)} · "
        f"never written {never}"
    )
    table = Table()
    for column in ("store", "holders", "running", "marks", "written", "cost/turn"):
        table.add_column(column)
    for r in o.stores:
        marks = _marks(r.shared, r.link_count, r.handed_on, r.dropped)
        table.add_row(
            _text(r.store_id),
            _text(", ".join(r.holders)),
            str(r.running_holders),
            " · ".join(marks),
            "written" if r.written else "never written",
            cost_text(r.cost),
        )
    return Group(_text(title, "bold"), table)


# ---- Agents --------------------------------------------------------------------------------------------


def agents(profiles: Iterable[tel.ProfileSection]) -> list[RenderableType]:
    out: list[RenderableType] = []
    for p in profiles:
        table = Table()
        for column in ("kind", "badge", "stores", "note"):
            table.add_column(column, overflow="fold")
        for row in p.modules:
            badge = Badge(row.badge).word if row.badge else "?"
            table.add_row(kind_word(row.kind), badge, _text(", ".join(row.store_ids)), _text(row.note))
        out.append(Group(_text(f"{p.profile}: {', '.join(p.instances)}", "bold"), table))
    return out


def _text(value: str, style: str = "") -> Text:
    """What a run's writers chose (a message, a profile name, a cause, a note) as text to draw, never as
    rich markup (a model's "[/INST]" in a message ended the console with a MarkupError; "[link=…]" made a
    link) and without control characters (an escape sequence in a message would reach the operator's
    terminal): each is shown as its escape, `\\x1b`."""
    return Text("".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in value), style=style)


def _short(text: str, width: int = 72) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"
