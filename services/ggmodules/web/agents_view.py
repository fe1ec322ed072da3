"""The Agents tab (R45, R46): per profile, its instances and how each kind is distributed among them."""

from __future__ import annotations

from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.web.html import badge_word, e, file_url, kind_word, run_url, view
from ggmodules.web.module_html import contents_html
from ggmodules.web.telemetry import RunViews


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
