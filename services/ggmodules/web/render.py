"""The web console's pages as HTML, from the Inspect RPCs' answers alone (R37-R46).

Server-rendered: every page is a function of the run's views and the URL (which instance, which file, which
store), so a page reopened later, or re-fetched when the run changes, shows the same state. `data-*`
attributes name what each element shows (agent, file, store, kind, badge) for the script and the tests.
Here: the page around a view, the error page and the runs page; each tab's view is its own module
(instances_view.py, modules_view.py, agents_view.py), over the primitives of html.py.
"""

from __future__ import annotations

from ggmodules.web.html import e, run_url, view
from ggmodules.web.telemetry import RunViews

TABS = ("instances", "modules", "agents")


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
        events = f' data-events="{run_url(run_id, "events")}" data-cursor="{views.instances.cursor}"'
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
