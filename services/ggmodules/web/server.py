"""The web console's http server: server-rendered pages of a run's three views, assets served from this
package, and a server-sent-events stream per run that says when the run changed.

It reads Telemetry's public RPCs and nothing else: one Subscribe stream over every run tells it which runs
exist and when each changes (`RunsWatch`); the pages are rendered from InspectInstances, InspectModules,
InspectAgents and GetStoreDetail at the moment they are asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
import structlog
from aiohttp import web

from ggmodules.core.errors import InvalidArgument
from ggmodules.core.ids import check_id
from ggmodules.web import agents_view, instances_view, modules_view, render
from ggmodules.web.html import run_url
from ggmodules.web.telemetry import RunViews, TelemetryReader

STATIC = Path(__file__).parent / "static"
STATIC_FILES = {path.name: path for path in sorted(STATIC.iterdir()) if path.is_file()}
# How often an idle event stream carries a comment, so proxies and the browser keep it open.
SSE_KEEPALIVE_SECONDS = 15.0
# Before following the stream again after Telemetry went away.
RECONNECT_SECONDS = 1.0
FRAGMENT_HEADER = "X-Fragment"


@dataclass(slots=True)
class RunState:
    first_cursor: int
    cursor: int
    status: str = ""


class RunsWatch:
    """Every run Telemetry holds, and the newest cursor of each, from one unfiltered Subscribe stream."""

    def __init__(self, reader: TelemetryReader, log: structlog.typing.FilteringBoundLogger) -> None:
        self._reader = reader
        self._log = log
        self.runs: dict[str, RunState] = {}
        self.cursor = 0
        self.caught_up = asyncio.Event()
        self._changed = asyncio.Condition()

    async def follow(self) -> None:
        """Follows the stream for as long as the console runs, resuming after the last cursor seen."""
        while True:
            try:
                async for response in self._reader.subscribe("", self.cursor):
                    await self._take(response)
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.OUT_OF_RANGE:
                    self.cursor = 0  # older than Telemetry retains: from the oldest it has
                    continue
                self._log.warning("telemetry_stream_lost", code=err.code().name, details=err.details())
            await asyncio.sleep(RECONNECT_SECONDS)

    async def _take(self, response: object) -> None:
        item = response.WhichOneof("item")  # type: ignore[attr-defined]
        if item == "event":
            ev = response.event  # type: ignore[attr-defined]
            self.cursor = ev.cursor
            run_id = ev.event.run_id
            if not run_id:
                return
            state = self.runs.get(run_id)
            if state is None:
                state = self.runs[run_id] = RunState(ev.cursor, ev.cursor)
            state.cursor = ev.cursor
            if ev.event.WhichOneof("body") == "run":
                state.status = ev.event.run.status
        else:
            self.caught_up.set()
        async with self._changed:
            self._changed.notify_all()

    async def wait_past(self, run_id: str, cursor: int, timeout: float) -> int:
        """The run's newest cursor once it is past `cursor`, or its cursor as it is after `timeout`."""
        def past() -> bool:
            state = self.runs.get(run_id)
            return state is not None and state.cursor > cursor

        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait_for(past), timeout)
        state = self.runs.get(run_id)
        return state.cursor if state is not None else 0


READER = web.AppKey("reader", TelemetryReader)
WATCH = web.AppKey("watch", RunsWatch)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# A refusal from Telemetry as the page's http status.
HTTP_STATUS = {
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAVAILABLE: 503,
}


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")


@web.middleware
async def refusals(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Telemetry's refusal as a page a person can act on; so is a malformed run id, agent id or store id in
    the address, refused here as the services refuse it (core/ids.py), before it is redirected to, streamed
    or sent to Telemetry."""
    try:
        check_id("run_id", request.match_info.get("run_id", ""))
        for field in ("agent", "store"):
            check_id(field, request.query.get(field, ""))
    except InvalidArgument as refused:
        return _html(render.error_page("Not an address of this console", refused.message), 400)
    try:
        return await handler(request)
    except grpc.aio.AioRpcError as err:
        status = HTTP_STATUS.get(err.code(), 502)
        address = request.app[READER].address
        title = f"Telemetry at {address} answered {err.code().name}"
        return _html(render.error_page(title, err.details() or ""), status)


async def runs_page(request: web.Request) -> web.Response:
    watch = request.app[WATCH]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(watch.caught_up.wait(), 5)
    runs = sorted(watch.runs.items(), key=lambda kv: kv[1].first_cursor, reverse=True)
    return _html(render.runs_page([(r, s.status, s.cursor) for r, s in runs]))


def _respond(request: web.Request, run_id: str, tab: str, views: RunViews, inner: str) -> web.Response:
    if request.headers.get(FRAGMENT_HEADER):
        return _html(inner)
    return _html(render.page(f"{tab.title()} · {run_id}", inner, run_id=run_id, tab=tab, views=views))


async def run_root(request: web.Request) -> web.Response:
    raise web.HTTPFound(run_url(request.match_info["run_id"], "instances"))


async def instances_page(request: web.Request) -> web.Response:
    reader, run_id = request.app[READER], request.match_info["run_id"]
    views = await reader.views(run_id)
    folders = views.instances.instances
    agent = request.query.get("agent") or (folders[0].agent_id if folders else "")
    file = request.query.get("file") or "modules/history"
    folder = next((f for f in folders if f.agent_id == agent), None)
    module = next((m for m in folder.modules if m.path == file), None) if folder else None
    detail = None
    if module is not None and file == "modules/history":
        detail = await reader.store_detail(run_id, module.strip.store_id)  # its open views and pinned blocks
    inner = instances_view.instances_view(run_id, views, agent, file, detail)
    return _respond(request, run_id, "instances", views, inner)


async def modules_page(request: web.Request) -> web.Response:
    reader, run_id = request.app[READER], request.match_info["run_id"]
    views = await reader.views(run_id)
    store = request.query.get("store", "")
    detail = await reader.store_detail(run_id, store) if store else None
    inner = modules_view.modules_view(run_id, views, store, detail)
    return _respond(request, run_id, "modules", views, inner)


async def agents_page(request: web.Request) -> web.Response:
    reader, run_id = request.app[READER], request.match_info["run_id"]
    views = await reader.views(run_id)
    return _respond(request, run_id, "agents", views, agents_view.agents_view(run_id, views))


async def run_events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: `cursor` with the run's newest cursor whenever it moves past what the page shows
    (`?after=`, else the newest already), a comment while idle."""
    watch, run_id = request.app[WATCH], request.match_info["run_id"]
    try:
        cursor = int(request.query.get("after", "-1"))
    except ValueError:
        raise web.HTTPBadRequest(text="after: a cursor, as the page's data-cursor gives it") from None
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    if cursor < 0:
        state = watch.runs.get(run_id)
        cursor = state.cursor if state is not None else 0
    while True:
        newest = await watch.wait_past(run_id, cursor, SSE_KEEPALIVE_SECONDS)
        if newest > cursor:
            cursor = newest
            await response.write(f"event: cursor\ndata: {cursor}\n\n".encode())
        else:
            await response.write(b": idle\n\n")


async def static_file(request: web.Request) -> web.FileResponse:
    """One of the console's own assets by name, anything else 404. Not aiohttp's static route: that answered
    a name longer than the file system takes with 500 (ENAMETOOLONG)."""
    path = STATIC_FILES.get(request.match_info["name"])
    if path is None:
        assets = ", ".join(STATIC_FILES)
        raise web.HTTPNotFound(text=f"the console has no asset by that name; it has {assets}")
    return web.FileResponse(path)


async def _follow(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.create_task(app[WATCH].follow())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await app[READER].close()


def build_app(reader: TelemetryReader, log: structlog.typing.FilteringBoundLogger) -> web.Application:
    app = web.Application(middlewares=[refusals])
    app[READER] = reader
    app[WATCH] = RunsWatch(reader, log)
    app.cleanup_ctx.append(_follow)
    app.router.add_get("/", runs_page)
    app.router.add_get("/runs/{run_id}", run_root)
    app.router.add_get("/runs/{run_id}/", run_root)
    app.router.add_get("/runs/{run_id}/instances", instances_page)
    app.router.add_get("/runs/{run_id}/modules", modules_page)
    app.router.add_get("/runs/{run_id}/agents", agents_page)
    app.router.add_get("/runs/{run_id}/events", run_events)
    app.router.add_get("/static/{name}", static_file)
    return app
