"""The Instances tab (R37-R41): a folder per instance, a file per module, the chosen file's pane."""

from __future__ import annotations

from collections.abc import Iterable

from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.web.html import (
    e,
    figures_row,
    file_url,
    kind_word,
    marks,
    run_url,
    view,
)
from ggmodules.web.module_html import blocks_html, identity_strip, system_prompt_html, turns_html
from ggmodules.web.telemetry import RunViews


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
        + identity_strip(run_id, s)
    )
    if kind == "history":
        body = turns_html(m.turns)
        if detail is not None and detail.contents.WhichOneof("contents") == "history":
            h = detail.contents.history
            body = system_prompt_html(h) + body + blocks_html(h)
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
