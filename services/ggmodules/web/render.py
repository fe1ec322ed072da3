"""The web console's pages as HTML, from the Inspect RPCs' answers alone (R37-R46).

Server-rendered: every page is a function of the run's views and the URL (which instance, which file, which
store), so a page reopened later, or re-fetched when the run changes, shows the same state. `data-*`
attributes name what each element shows (agent, file, store, kind, badge) for the script and the tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from urllib.parse import urlencode

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.core.console.views import Badge
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.web.telemetry import RunViews

LINK = "🔗"
TABS = ("instances", "modules", "agents")


def e(value: object) -> str:
    return escape(str(value), quote=True)


def word(enum_name: str, prefix: str) -> str:
    return enum_name.removeprefix(prefix).lower().replace("_", " ")


def kind_word(kind: int) -> str:
    if not kind:
        return "?"
    return common_pb2.Kind.Name(common_pb2.Kind.ValueType(kind)).removeprefix("KIND_").lower()


def origin_word(origin: int) -> str:
    if not origin:
        return "unknown"
    return word(common_pb2.Origin.Name(common_pb2.Origin.ValueType(origin)), "ORIGIN_")


def badge_word(badge: int) -> str:
    return Badge(badge).word if badge else "?"


def cost_html(cost: common_pb2.Cost) -> str:
    """Measured (a number, zero included), unmeasured, none by construction: never conflated (R43)."""
    match cost.WhichOneof("value"):
        case "measured_tokens":
            return f'<span class="cost measured" data-cost="measured">{cost.measured_tokens:,} tokens</span>'
        case "none_by_construction":
            return '<span class="cost none" data-cost="none">none by construction</span>'
    return '<span class="cost unmeasured" data-cost="unmeasured">unmeasured</span>'


def run_url(run_id: str, tab: str, **query: str) -> str:
    q = {k: v for k, v in query.items() if v}
    return f"/runs/{e(run_id)}/{tab}" + (f"?{e(urlencode(q))}" if q else "")


def file_url(run_id: str, agent_id: str, file: str) -> str:
    return run_url(run_id, "instances", agent=agent_id, file=file)


def figures_row(items: Iterable[tuple[str, str]]) -> str:
    """A row of large values over muted labels."""
    cells = "".join(
        f'<div class="figure" data-figure="{e(label)}"><div class="value">{value}</div>'
        f'<div class="label">{e(label)}</div></div>'
        for label, value in items
    )
    return f'<div class="figures">{cells}</div>'


def marks(shared: bool, link_count: int, handed_on: bool, dropped: bool) -> str:
    out = []
    if shared:
        title = f"held by {link_count} at once"
        out.append(f'<span class="mark shared" title="{title}">{LINK} {link_count}</span>')
    if handed_on:
        out.append('<span class="mark handed-on">handed on</span>')
    if dropped:
        out.append('<span class="mark dropped">dropped</span>')
    return "".join(out)


# ---- the page around a view ------------------------------------------------------------------------------


def page(title: str, body: str, *, run_id: str = "", tab: str = "", views: RunViews | None = None) -> str:
    nav = ""
    events = ""
    if run_id and views is not None:
        offered = views.instances.modules_view
        links = []
        for t in TABS:
            if t == "modules" and not offered:
                continue
            current = ' aria-current="page"' if t == tab else ""
            href = run_url(run_id, t)
            links.append(f'<a class="tab" data-tab="{t}" href="{href}"{current}>{t.title()}</a>')
        nav = f'<nav class="tabs">{"".join(links)}</nav>'
        events = f' data-events="/runs/{e(run_id)}/events" data-cursor="{views.instances.cursor}"'
    run = f'<span class="run-id">{e(run_id)}</span>' if run_id else ""
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{e(title)} · ggmodules</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/static/console.css">'
        '<script src="/static/console.js" defer></script></head>'
        f"<body{events}>"
        f'<header><a class="home" href="/">ggmodules console</a>{run}{nav}'
        '<span class="live" id="live" hidden>live</span></header>'
        f"{body}</body></html>"
    )


def view(inner: str, cursor: int) -> str:
    """The part the script swaps when the run changes."""
    return f'<main id="view" data-cursor="{cursor}">{inner}</main>'


def error_page(title: str, message: str) -> str:
    return page(title, view(f'<div class="error"><h1>{e(title)}</h1><p>{e(message)}</p></div>', 0))


# ---- runs -----------------------------------------------------------------------------------------------


def runs_page(runs: list[tuple[str, str, int]]) -> str:
    rows = "".join(
        f'<tr data-run="{e(r)}"><td><a href="{run_url(r, "instances")}">{e(r)}</a></td>'
        f'<td>{e(status or "?")}</td><td class="num">{cursor}</td></tr>'
        for r, status, cursor in runs
    )
    body = (
        "<h1>Runs</h1>"
        + (
            f'<table class="runs"><thead><tr><th>run</th><th>status</th><th>last event</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>"
            if runs
            else '<p class="muted">No run has reported to Telemetry yet.</p>'
        )
    )
    return page("Runs", f'<main id="view" data-cursor="0">{body}</main>')


# ---- Instances (R37-R41) -----------------------------------------------------------------------------------


def instances_view(
    run_id: str,
    views: RunViews,
    agent: str,
    file: str,
    detail: tel.StoreDetail | None,
) -> str:
    folders = list(views.instances.instances)
    tree = "".join(_folder(run_id, f, agent, file) for f in folders)
    chosen = next((f for f in folders if f.agent_id == agent), None)
    module = next((m for m in chosen.modules if m.path == file), None) if chosen else None
    if chosen is None or module is None:
        pane = '<p class="muted">Choose a file on the left.</p>'
    else:
        pane = _module_file(run_id, chosen, module, detail)
    inner = f'<div class="split"><nav class="tree">{tree}</nav><section class="pane">{pane}</section></div>'
    return view(inner, views.instances.cursor)


def _folder(run_id: str, f: tel.InstanceFolder, agent: str, file: str) -> str:
    state = "running" if f.running else "stopped"
    own = "".join(f'<li class="own-file muted">{e(name)}</li>' for name in f.files)
    files = []
    for m in f.modules:
        s = m.strip
        current = ' aria-current="true"' if f.agent_id == agent and m.path == file else ""
        files.append(
            f'<li><a class="file-link" data-agent="{e(f.agent_id)}" data-file="{e(m.path)}"'
            f' href="{file_url(run_id, f.agent_id, m.path)}"{current}>'
            f'{e(m.path.removeprefix("modules/"))}</a>'
            f' <span class="store-id">{e(s.store_id)}</span>'
            f"{marks(s.shared, s.link_count, s.handed_on, s.dropped)}</li>"
        )
    opened = " open" if f.agent_id == agent else ""
    relatives = "".join(
        _relatives(run_id, label, ids) for label, ids in
        (("forks", f.forks), ("successors", f.successors), ("subagents", f.subagents))
    )
    return (
        f'<details class="folder" data-agent="{e(f.agent_id)}" open>'
        f'<summary><span class="agent">{e(f.agent_id)}</span> '
        f'<a class="profile-link muted" href="{run_url(run_id, "agents")}#profile-{e(f.profile)}">'
        f'{e(f.profile)}</a> <span class="muted">· {e(f.cause)}</span> '
        f'<span class="state {state}">{state}</span></summary>'
        f'<ul class="own">{own}</ul>'
        f'<details class="modules" data-agent="{e(f.agent_id)}"{opened}><summary>modules/</summary>'
        f'<ul>{"".join(files)}</ul></details>{relatives}</details>'
    )


def _relatives(run_id: str, label: str, ids: Iterable[str]) -> str:
    links = "".join(
        f'<a class="chip" data-agent="{e(a)}" href="{file_url(run_id, a, "modules/history")}">{e(a)}</a>'
        for a in ids
    )
    if not links:
        return ""
    return f'<div class="relatives" data-relation="{label}"><span class="muted">{label}</span> {links}</div>'


def _module_file(
    run_id: str, f: tel.InstanceFolder, m: tel.ModuleFile, detail: tel.StoreDetail | None
) -> str:
    s = m.strip
    kind = kind_word(s.kind)
    head = (
        f'<h2><span class="agent">{e(f.agent_id)}</span> / {e(m.path)}</h2>'
        + _strip(run_id, s)
    )
    if kind == "history":
        body = _turns(m.turns)
        if detail is not None and detail.contents.WhichOneof("contents") == "history":
            h = detail.contents.history
            body = _system_prompt(h) + body + _blocks(h)
    elif m.HasField("figures"):
        fg = m.figures
        body = figures_row(
            (("items", f"{fg.items:,}"), ("bytes", f"{fg.bytes:,}"), ("writes", f"{fg.writes:,}"))
        )
    else:
        body = ""
    return (
        f'<article class="file" data-agent="{e(f.agent_id)}" data-file="{e(m.path)}"'
        f' data-store="{e(s.store_id)}">'
        f"{head}{body}</article>"
    )


def _strip(run_id: str, s: tel.IdentityStrip) -> str:
    kind = kind_word(s.kind)
    store = (
        f'<a class="store-id" href="{run_url(run_id, "modules", store=s.store_id)}">{e(s.store_id)}</a>'
        if s.links_to_modules_view
        else f'<span class="store-id">{e(s.store_id)}</span>'
    )
    chips = "".join(
        f'<a class="chip co-holder" data-agent="{e(c.agent_id)}" '
        f'href="{file_url(run_id, c.agent_id, c.file)}">{e(c.agent_id)}</a>'
        for c in s.co_holders
    )
    lifetime = "".join(
        f'<li><span class="what">{e(x.what)}</span> <span class="muted">by</span> {e(x.agent_id)}'
        + (f' <span class="cause">({e(x.cause)})</span>' if x.cause else "")
        + "</li>"
        for x in s.lifetime
    )
    return (
        f'<div class="strip" data-store="{e(s.store_id)}">'
        f'<div class="strip-row">{store}<span class="tag">{e(kind)}</span>'
        f'<span class="tag">{e(origin_word(s.origin))}</span>'
        f'<span class="tag">{"read-write" if s.may_write else "read-only"}</span>'
        f"{marks(s.shared, s.link_count, s.handed_on, s.dropped)}</div>"
        f'<div class="strip-row"><span class="muted">this window</span> {cost_html(s.cost_this_window)}'
        f' <span class="muted">all live holders</span> {cost_html(s.cost_all_holders)}</div>'
        + (f'<div class="strip-row co-holders"><span class="muted">co-holders</span> {chips}</div>'
           if chips else "")
        + f'<details class="lifetime" open><summary>lifetime ({len(s.lifetime)})</summary>'
        f"<ol>{lifetime}</ol></details>"
        "</div>"
    )


def _turns(turns: Iterable[tel.HistoryTurn]) -> str:
    out = []
    for t in turns:
        msgs = "".join(
            f'<li class="message {e(m.role)}" data-seq="{m.seq}"><span class="role">{e(m.role)}</span>'
            f'<div class="content">{e(m.content)}</div></li>'
            for m in t.messages
        )
        out.append(
            f'<section class="turn" data-turn="{t.turn}"><h3>turn {t.turn}</h3><ol>{msgs}</ol></section>'
        )
    return f'<div class="log">{"".join(out)}</div>' if out else '<p class="muted">No messages yet.</p>'


def _system_prompt(h: module_pb2.HistoryContents) -> str:
    if not h.system_prompt_set:
        return '<p class="system-prompt muted">system prompt not set</p>'
    prompt = f"<q>{e(h.system_prompt)}</q>"
    return f'<p class="system-prompt"><span class="muted">system prompt</span> {prompt}</p>'


def _blocks(h: module_pb2.HistoryContents) -> str:
    views = "".join(f'<li data-view="{e(b.id)}"><b>{e(b.id)}</b> <pre>{e(b.content)}</pre></li>'
                    for b in h.open_views)
    pins = "".join(f'<li data-pin="{e(b.id)}"><b>{e(b.id)}</b> <pre>{e(b.content)}</pre></li>'
                   for b in h.pinned_blocks)
    return (
        f'<h3>open views ({len(h.open_views)})</h3><ul class="blocks">{views}</ul>'
        f'<h3>pinned blocks ({len(h.pinned_blocks)})</h3><ul class="blocks">{pins}</ul>'
    )


# ---- Modules (R42-R44) ------------------------------------------------------------------------------------


def modules_view(run_id: str, views: RunViews, store: str, detail: tel.StoreDetail | None) -> str:
    if not views.modules.modules_view:
        inner = '<p class="muted">This run has no Modules view: no profile enables more than the window.</p>'
        return view(inner, views.modules.cursor)
    groups = "".join(_kind_group(run_id, o, store) for o in views.modules.kinds)
    pane = (
        _detail(run_id, detail) if detail is not None else '<p class="muted">Select a store to read it.</p>'
    )
    inner = (
        f'<div class="split wide"><div class="groups">{groups}</div>'
        f'<section class="pane">{pane}</section></div>'
    )
    return view(inner, views.modules.cursor)


def _kind_group(run_id: str, o: tel.KindOverview, selected: str) -> str:
    never = (
        f"{o.never_written.count}"
        if o.never_written.WhichOneof("value") == "count"
        else f'<span class="withheld" title="{e(o.never_written.withheld)}">withheld</span>'
    )
    widest = f" <small>widest {o.widest_share}</small>" if o.widest_share else ""
    figures = figures_row((
        ("stores", f"{o.store_count}"),
        ("holders", f"{o.holders}"),
        ("running", f"{o.running}"),
        ("shared", f"{o.shared_stores}" + widest),
        ("cost / turn", cost_html(o.cost_per_turn)),
        ("never written", never),
    ))
    rows = "".join(_store_row(run_id, r, selected) for r in o.stores)
    kind = kind_word(o.kind)
    return (
        f'<section class="kind-group" data-kind="{e(kind)}"><h2>{e(kind)}</h2>{figures}'
        '<table class="stores"><thead><tr><th>store</th><th>holders</th><th></th><th>written</th>'
        f"<th>cost / turn</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _store_row(run_id: str, r: tel.StoreRow, selected: str) -> str:
    holders = "".join(
        f'<a class="chip" href="{file_url(run_id, h, "modules/" + kind_word(r.kind))}">{e(h)}</a>'
        for h in r.holders
    )
    current = ' aria-current="true"' if r.store_id == selected else ""
    return (
        f'<tr data-store="{e(r.store_id)}"{current}><td><a class="store-link" '
        f'href="{run_url(run_id, "modules", store=r.store_id)}">{e(r.store_id)}</a></td>'
        f'<td>{holders} <span class="muted">{r.running_holders} running</span></td>'
        f"<td>{marks(r.shared, r.link_count, r.handed_on, r.dropped)}</td>"
        f'<td>{"written" if r.written else "<span class=muted>never written</span>"}</td>'
        f"<td>{cost_html(r.cost)}</td></tr>"
    )


def _detail(run_id: str, d: tel.StoreDetail) -> str:
    s = d.identity
    kind = kind_word(s.kind)
    holders = "".join(
        f'<tr data-holder="{e(h.agent_id)}"><td><a href="{file_url(run_id, h.agent_id, "modules/" + kind)}">'
        f'{e(h.agent_id)}</a></td><td>{e(origin_word(h.origin))}</td>'
        f'<td>{"read-write" if h.may_write else "read-only"}</td>'
        f'<td>{"holding" if h.active else "<span class=muted>let go</span>"}</td>'
        f"<td>{cost_html(h.cost)}</td></tr>"
        for h in d.holders
    )
    lifetime = "".join(
        f'<li><span class="what">{e(x.what)}</span> <span class="muted">by</span> {e(x.agent_id)}'
        + (f' <span class="cause">({e(x.cause)})</span>' if x.cause else "")
        + "</li>"
        for x in d.lifetime
    )
    costs = "".join(
        f"<tr><td>{e(h.agent_id)}</td><td>{cost_html(h.cost)}</td></tr>" for h in d.holders if h.active
    )
    return (
        f'<article class="detail" data-store="{e(s.store_id)}"><h2>{e(s.store_id)}</h2>'
        f'<section data-section="identity"><h3>Identity</h3>{_strip(run_id, s)}</section>'
        f'<section data-section="holders"><h3>Holders</h3><table><thead><tr><th>holder</th><th>origin</th>'
        "<th>access</th><th></th><th>cost to its window</th></tr></thead>"
        f"<tbody>{holders}</tbody></table></section>"
        f'<section data-section="lifetime"><h3>Lifetime</h3><ol>{lifetime}</ol></section>'
        f'<section data-section="cost"><h3>Cost</h3><table><tbody>{costs}'
        f'<tr class="sum"><td>summed, live holders</td><td>{cost_html(d.summed_live_cost)}</td></tr>'
        "</tbody></table></section>"
        f'<section data-section="contents"><h3>Contents</h3>{contents_html(d.contents)}</section></article>'
    )


def contents_html(c: module_pb2.ModuleContents) -> str:
    match c.WhichOneof("contents"):
        case "history":
            h = c.history
            prompt = _system_prompt(h)
            turns: dict[int, list[module_pb2.Message]] = {}
            for m in h.messages:
                turns.setdefault(m.turn, []).append(m)
            log = _turns(tel.HistoryTurn(turn=t, messages=ms) for t, ms in turns.items())
            return prompt + log + _blocks(h)
        case "memories":
            entries = "".join(
                f'<li><b>{e(x.name)}</b> <span class="muted">by {e(x.agent_id)}</span>'
                f"<pre>{e(x.body)}</pre></li>"
                for x in c.memories.entries
            )
            strategy = word(common_pb2.MemoryStrategy.Name(c.memories.strategy), "MEMORY_STRATEGY_")
            return f'<p class="muted">{e(strategy)}</p>' + (
                f"<ul>{entries}</ul>" if entries else '<p class="muted">empty</p>'
            )
        case "tasks":
            rows = "".join(
                f'<tr><td class="num">{t.id}</td><td>{e(t.title)}</td>'
                f'<td>{e(word(module_pb2.TaskStatus.Name(t.status), "TASK_STATUS_"))}</td>'
                f'<td>{", ".join(str(b) for b in t.blocked_by)}</td></tr>'
                for t in c.tasks.tasks
            )
            return (
                f"<table><thead><tr><th>#</th><th>task</th><th>status</th><th>blocked by</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>" if rows else '<p class="muted">no tasks</p>'
            )
        case "board":
            rows = "".join(
                f"<tr><td>{e(i.id)}</td><td>{e(i.title)}</td>"
                f'<td>{e(word(module_pb2.IssueStatus.Name(i.status), "ISSUE_STATUS_"))}</td></tr>'
                for i in c.board.issues
            )
            return (
                f"<table><thead><tr><th>id</th><th>issue</th><th>status</th></tr></thead><tbody>{rows}</tbody>"
                "</table>" if rows else '<p class="muted">no issues</p>'
            )
        case "skills":
            s = c.skills
            cat = "".join(f"<li><b>{e(k.name)}</b> {e(k.description)}</li>" for k in s.catalogue)
            return (
                f'<p><span class="muted">directory</span> {e(s.directory or "-")}</p>'
                f'<ul>{cat or "<li class=muted>empty catalogue</li>"}</ul>'
                f'<p><span class="muted">read</span> {e(", ".join(s.read_set) or "nothing yet")}</p>'
            )
        case "archive":
            threads = "".join(
                f"<li>#{t.id} <b>{e(t.title)}</b> <span class=muted>{len(t.messages)} messages</span></li>"
                for t in c.archive.threads
            )
            return f"<ol>{threads}</ol>" if threads else '<p class="muted">no threads archived</p>'
    return '<p class="muted">no contents reported</p>'


# ---- Agents (R45, R46) ------------------------------------------------------------------------------------


def agents_view(run_id: str, views: RunViews) -> str:
    offered = views.instances.modules_view
    sections = "".join(_profile(run_id, p, offered) for p in views.agents.profiles)
    inner = sections or '<p class="muted">No instance has reported its roster yet.</p>'
    return view(f'<div class="profiles">{inner}</div>', views.agents.cursor)


def _profile(run_id: str, p: tel.ProfileSection, offered: bool) -> str:
    chips = "".join(
        f'<a class="chip" data-agent="{e(a)}" href="{file_url(run_id, a, "modules/history")}">{e(a)}</a>'
        for a in p.instances
    )
    rows = []
    for r in p.modules:
        kind = kind_word(r.kind)
        badge = badge_word(r.badge)
        stores = "".join(
            f'<a class="store-link" href="{run_url(run_id, "modules", store=s)}">{e(s)}</a>'
            if offered else f'<span class="store-id">{e(s)}</span>'
            for s in r.store_ids
        )
        inline = ""
        if r.HasField("inline_contents"):
            inline = f'<div class="inline">{contents_html(r.inline_contents)}</div>'
        note = f'<div class="note">{e(r.note)}</div>' if r.note else ""
        rows.append(
            f'<tr data-kind="{e(kind)}"><td>{e(kind)}</td>'
            f'<td><span class="badge" data-badge="{e(badge)}">{e(badge)}</span></td>'
            f'<td class="stores">{stores}</td><td>{note}{inline}</td></tr>'
        )
    return (
        f'<section class="profile" id="profile-{e(p.profile)}" data-profile="{e(p.profile)}">'
        f"<h2>{e(p.profile)}</h2>"
        f'<div class="chips">{chips}</div><h3>Modules</h3><table class="agent-modules"><thead><tr>'
        "<th>kind</th><th>distribution</th><th>stores</th><th></th></tr></thead>"
        f'<tbody>{"".join(rows)}</tbody></table></section>'
    )
