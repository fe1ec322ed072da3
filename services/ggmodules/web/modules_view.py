"""The Modules tab (R42-R44): every store by kind, one store's holders and figures, and a module's contents
(module_html.py renders the contents)."""

from __future__ import annotations

from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.web.html import (
    cost_html,
    e,
    figures_row,
    file_url,
    kind_word,
    marks,
    origin_word,
    run_url,
    view,
)
from ggmodules.web.module_html import contents_html, identity_strip
from ggmodules.web.telemetry import RunViews


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
        f'<section data-section="identity"><h3>Identity</h3>{identity_strip(run_id, s)}</section>'
        f'<section data-section="holders"><h3>Holders</h3><table><thead><tr><th>holder</th><th>origin</th>'
        "<th>access</th><th></th><th>cost to its window</th></tr></thead>"
        f"<tbody>{holders}</tbody></table></section>"
        f'<section data-section="lifetime"><h3>Lifetime</h3><ol>{lifetime}</ol></section>'
        f'<section data-section="cost"><h3>Cost</h3><table><tbody>{costs}'
        f'<tr class="sum"><td>summed, live holders</td><td>{cost_html(d.summed_live_cost)}</td></tr>'
        "</tbody></table></section>"
        f'<section data-section="contents"><h3>Contents</h3>{contents_html(d.contents)}</section></article>'
    )
