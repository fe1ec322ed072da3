"""The console's three views of a folded run as text for a terminal."""

from __future__ import annotations

from ggmodules.core.console import ConsoleModel
from ggmodules.core.console.views import (
    AgentsView,
    Cost,
    IdentityStrip,
    InstanceFolder,
    InstancesView,
    KindOverview,
    ModuleFile,
    ModulesView,
)

LINK = "🔗"


def render(model: ConsoleModel) -> str:
    """Instances, Modules (only where the run has that view, R41) and Agents."""
    instances = model.instances()
    parts = [f"run {model.run_id or '?'}  (cursor {model.cursor})", "", render_instances(instances)]
    modules = model.modules()
    if modules.modules_view:
        parts += ["", render_modules(modules)]
    parts += ["", render_agents(model.agents())]
    return "\n".join(parts) + "\n"


def render_instances(view: InstancesView) -> str:
    lines = ["== Instances =="]
    for folder in view.instances:
        lines += _folder(folder)
    return "\n".join(lines)


def _folder(f: InstanceFolder) -> list[str]:
    state = "running" if f.running else "stopped"
    lines = [f"{f.agent_id}  [{f.profile or '?'}, {f.cause or '?'}, {state}]"]
    lines.append("  " + "  ".join(f.files))
    lines.append("  modules/")
    for m in f.modules:
        lines += _module_file(m)
    if f.successors:
        lines.append("  successors: " + ", ".join(f.successors))
    if f.subagents:
        lines.append("  subagents: " + ", ".join(f.subagents))
    return lines


def _module_file(m: ModuleFile) -> list[str]:
    s = m.strip
    lines = [f"    {m.path.removeprefix('modules/'):<9} {_strip(s)}"]
    if s.co_holders:
        lines.append("      co-holders: " + ", ".join(f"{c.agent_id}:{c.file}" for c in s.co_holders))
    if s.lifetime:
        last = s.lifetime[-1]
        cause = f" ({last.cause})" if last.cause else ""
        count = f"{len(s.lifetime)} entr{'y' if len(s.lifetime) == 1 else 'ies'}"
        lines.append(f"      lifetime: {count}; last {last.what} by {last.agent_id}{cause}")
    for t in m.turns:
        for msg in t.messages:
            lines.append(f"      turn {t.turn} #{msg.seq} {msg.role}: {_short(msg.content)}")
    if m.figures is not None:
        f = m.figures
        lines.append(f"      {f.items} items   {f.bytes} bytes   {f.writes} writes")
    return lines


def _strip(s: IdentityStrip) -> str:
    marks = []
    if s.shared:
        marks.append(f"{LINK} {s.link_count}")
    if s.handed_on:
        marks.append("handed on")
    if s.dropped:
        marks.append("dropped")
    access = "rw" if s.may_write else "ro"
    mark = f"  {' · '.join(marks)}" if marks else ""
    return (
        f"{s.store_id}  {s.origin.name.lower()} {access}  "
        f"cost this window: {_cost(s.cost_this_window)}  all holders: {_cost(s.cost_all_holders)}{mark}"
    )


def render_modules(view: ModulesView) -> str:
    lines = ["== Modules =="]
    for o in view.kinds:
        lines += _overview(o)
    return "\n".join(lines)


def _overview(o: KindOverview) -> list[str]:
    never = str(o.never_written.count) if o.never_written.count is not None else "withheld"
    lines = [
        f"{o.kind.word}: {o.store_count} stores · {o.holders} holders · {o.running} running · "
        f"{o.shared_stores} shared (widest {o.widest_share}) · cost/turn {_cost(o.cost_per_turn)} · "
        f"never written {never}"
    ]
    for r in o.stores:
        marks = [f"{LINK} {r.link_count}"] if r.shared else []
        marks += ["handed on"] if r.handed_on else []
        marks += ["dropped"] if r.dropped else []
        marks += ["written" if r.written else "never written"]
        lines.append(
            f"  {r.store_id:<12} holders {', '.join(r.holders)} ({r.running_holders} running)  "
            f"{' · '.join(marks)}  cost {_cost(r.cost)}"
        )
    return lines


def render_agents(view: AgentsView) -> str:
    lines = ["== Agents =="]
    for p in view.profiles:
        lines.append(f"{p.profile}: {', '.join(p.instances)}")
        for row in p.modules:
            lines.append(f"  {row.kind.word:<9} {row.badge.word:<13} {', '.join(row.store_ids)}")
            if row.note:
                lines.append(f"    note: {row.note}")
    return "\n".join(lines)


def _cost(c: Cost) -> str:
    return str(c)


def _short(text: str, width: int = 72) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"
