"""The web console's HTML primitives: escaping, the words for enum values, links, figures and marks, and
the part of a page the script swaps (`view`). The pages are render.py (frame, runs) and instances_view.py,
modules_view.py, agents_view.py (one per tab)."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from urllib.parse import quote, urlencode

from ggmodules.common.v1 import common_pb2
from ggmodules.core.console.views import Badge

LINK = "🔗"


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
    return f"/runs/{quote(run_id, safe='')}/{tab}" + (f"?{e(urlencode(q))}" if q else "")


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


def view(inner: str, cursor: int) -> str:
    """The part the script swaps when the run changes."""
    return f'<main id="view" data-cursor="{cursor}">{inner}</main>'
