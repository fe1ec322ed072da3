"""A module as HTML, on every tab: its identity strip, and its contents (a window's turns, system prompt and
pinned blocks; memories, tasks, board, skills, archive)."""

from __future__ import annotations

from collections.abc import Iterable

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.web.html import cost_html, e, file_url, kind_word, marks, origin_word, run_url, word


def identity_strip(run_id: str, s: tel.IdentityStrip) -> str:
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


def turns_html(turns: Iterable[tel.HistoryTurn]) -> str:
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


def system_prompt_html(h: module_pb2.HistoryContents) -> str:
    if not h.system_prompt_set:
        return '<p class="system-prompt muted">system prompt not set</p>'
    prompt = f"<q>{e(h.system_prompt)}</q>"
    return f'<p class="system-prompt"><span class="muted">system prompt</span> {prompt}</p>'


def blocks_html(h: module_pb2.HistoryContents) -> str:
    views = "".join(f'<li data-view="{e(b.id)}"><b>{e(b.id)}</b> <pre>{e(b.content)}</pre></li>'
                    for b in h.open_views)
    pins = "".join(f'<li data-pin="{e(b.id)}"><b>{e(b.id)}</b> <pre>{e(b.content)}</pre></li>'
                   for b in h.pinned_blocks)
    return (
        f'<h3>open views ({len(h.open_views)})</h3><ul class="blocks">{views}</ul>'
        f'<h3>pinned blocks ({len(h.pinned_blocks)})</h3><ul class="blocks">{pins}</ul>'
    )


def contents_html(c: module_pb2.ModuleContents) -> str:
    match c.WhichOneof("contents"):
        case "history":
            h = c.history
            prompt = system_prompt_html(h)
            turns: dict[int, list[module_pb2.Message]] = {}
            for m in h.messages:
                turns.setdefault(m.turn, []).append(m)
            log = turns_html(tel.HistoryTurn(turn=t, messages=ms) for t, ms in turns.items())
            return prompt + log + blocks_html(h)
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
