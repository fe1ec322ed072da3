"""`Client` (sync) and `AsyncClient` (asyncio): every Registry, Transfer and Telemetry RPC, ModuleStore
reads and tools, a Telemetry stream to follow, and every List call as an iterator over all its pages.

    with Client(registry="127.0.0.1:50051", modulestore="127.0.0.1:50052", transfer="127.0.0.1:50053",
                telemetry="127.0.0.1:50054") as gg:
        run = gg.create_run("demo", [Profile("planner", tasks=True)], board=True)
        planner = gg.open_instance(run.id, "planner")

Writes go through an agent's module handles (`planner.history.append(...)`), made as that agent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from ggmodules.sdk import modulestore_calls as ms
from ggmodules.sdk import registry_calls as reg
from ggmodules.sdk import telemetry_calls as tel
from ggmodules.sdk import transfer_calls as tr
from ggmodules.sdk.agent import opens, transfers
from ggmodules.sdk.aio_transport import AsyncTransport
from ggmodules.sdk.bound import Async, Bound, M, Sync, call
from ggmodules.sdk.config import ClientConfig
from ggmodules.sdk.results import Instance, Run, Store
from ggmodules.sdk.stream import (
    RECONNECT,
    AsyncSubscription,
    Reconnect,
    Subscription,
    every_item,
    every_item_async,
)
from ggmodules.sdk.transport import SyncTransport
from ggmodules.sdk.words import Kind
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel_pb


def _config(registry: str | None, modulestore: str | None, transfer: str | None, telemetry: str | None,
            config: ClientConfig | None) -> ClientConfig:
    """Without a config: `ClientConfig.from_env()`, so the operator credential and the CA that `ggmodules up`
    wrote under ./var/ are used as they are."""
    config = config or ClientConfig.from_env()
    return replace(config, registry=registry or config.registry,
                   modulestore=modulestore or config.modulestore, transfer=transfer or config.transfer,
                   telemetry=telemetry or config.telemetry)


def _subscribe_request(run_id: str, agent_id: str, after_cursor: int,
                       heartbeat_ms: int) -> tel_pb.SubscribeRequest:
    return tel_pb.SubscribeRequest(run_id=run_id, agent_id=agent_id, after_cursor=after_cursor,
                                   heartbeat_ms=heartbeat_ms)


class _Client(Bound[M]):
    # Registry
    create_run = call(reg.create_run)
    get_run = call(reg.get_run)
    list_runs = call(reg.list_runs)
    finish_run = call(reg.finish_run)
    open_instance = opens(reg.open_instance)
    spawn_subagent = opens(reg.spawn_subagent)
    fork_instance = opens(reg.fork_instance)
    get_instance = call(reg.get_instance)
    list_instances = call(reg.list_instances)
    # An existing instance as an agent, with its module handles.
    agent = opens(reg.get_instance)
    # ModuleStore
    get_store = call(ms.get_store)
    list_stores = call(ms.list_stores)
    render_prompt = call(ms.render_prompt)
    list_tools = call(ms.list_tools)
    call_tool = call(ms.call_tool)
    search_archive = call(ms.search_archive)
    # Transfer: `transfer.successor` is the successor as an agent.
    transition = transfers(tr.transition)
    exec = transfers(tr.exec_profile)
    get_transfer = transfers(tr.get_transfer)
    # Telemetry
    report_turn = call(tel.report_turn)
    inspect_instances = call(tel.inspect_instances)
    inspect_modules = call(tel.inspect_modules)
    inspect_agents = call(tel.inspect_agents)
    get_store_detail = call(tel.get_store_detail)

    def add_credential(self, run_id: str, agent_id: str, credential: str) -> None:
        """Holds an agent's credential received elsewhere (e.g. from another process that opened it), so
        `agent(run_id, agent_id)` writes as that agent. Credentials in this client's own answers are kept
        without this."""
        self._transport.wallet.add_agent(run_id, agent_id, credential)


class Client(_Client[Sync]):
    """Sync client. Addresses default to `ggmodules up`'s; every call has the config's deadline."""

    _transport: SyncTransport

    def __init__(self, registry: str | None = None, modulestore: str | None = None,
                 transfer: str | None = None, telemetry: str | None = None, *,
                 config: ClientConfig | None = None, interceptors: Sequence[Any] = ()) -> None:
        """`interceptors`: `grpc.UnaryUnaryClientInterceptor`s, applied to every channel."""
        super().__init__(SyncTransport(_config(registry, modulestore, transfer, telemetry, config),
                                       interceptors))

    def subscribe(self, run_id: str = "", agent_id: str = "", *, after_cursor: int = 0, heartbeat_ms: int = 0,
                  heartbeats: bool = False, reconnect: Reconnect = RECONNECT) -> Subscription:
        """Telemetry's events after `after_cursor` (0: the oldest retained), of one agent, one run or every
        run, then new ones as they come; resumed from the last cursor across reconnects (see
        `ggmodules.sdk.stream`). Iterate it; `close()` it (or use `with`) when done."""
        t = self._transport
        return Subscription(partial(t.stream, "telemetry", "Subscribe"), t.raise_typed,
                            _subscribe_request(run_id, agent_id, after_cursor, heartbeat_ms),
                            heartbeats=heartbeats, reconnect=reconnect)

    def iter_runs(self, *, page_size: int = 0) -> Iterator[Run]:
        """Every run, fetching page after page as the iteration goes."""
        return every_item(self._transport.run, lambda token: reg.list_runs(
            page_size=page_size, page_token=token))

    def iter_instances(self, run_id: str, *, page_size: int = 0) -> Iterator[Instance]:
        """Every instance of a run, page after page."""
        return every_item(self._transport.run, lambda token: reg.list_instances(
            run_id, page_size=page_size, page_token=token))

    def iter_stores(self, run_id: str, kind: Kind | str | None = None, *,
                    page_size: int = 0) -> Iterator[Store]:
        """Every store of a run (of one kind when given), page after page."""
        return every_item(self._transport.run, lambda token: ms.list_stores(
            run_id, kind, page_size=page_size, page_token=token))

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Client[Async]):
    """asyncio client: the same calls as `Client`, returning awaitables. Channels open on the first call."""

    _transport: AsyncTransport

    def __init__(self, registry: str | None = None, modulestore: str | None = None,
                 transfer: str | None = None, telemetry: str | None = None, *,
                 config: ClientConfig | None = None, interceptors: Sequence[Any] = ()) -> None:
        """`interceptors`: `grpc.aio.UnaryUnaryClientInterceptor`s, applied to every channel."""
        super().__init__(AsyncTransport(_config(registry, modulestore, transfer, telemetry, config),
                                        interceptors))

    def subscribe(self, run_id: str = "", agent_id: str = "", *, after_cursor: int = 0, heartbeat_ms: int = 0,
                  heartbeats: bool = False, reconnect: Reconnect = RECONNECT) -> AsyncSubscription:
        """`Client.subscribe` for asyncio: `async for item in gg.subscribe(...)`."""
        t = self._transport
        return AsyncSubscription(partial(t.stream, "telemetry", "Subscribe"), t.raise_typed,
                                 _subscribe_request(run_id, agent_id, after_cursor, heartbeat_ms),
                                 heartbeats=heartbeats, reconnect=reconnect)

    def iter_runs(self, *, page_size: int = 0) -> AsyncIterator[Run]:
        """Every run, page after page: `async for run in gg.iter_runs()`."""
        return every_item_async(self._transport.run, lambda token: reg.list_runs(
            page_size=page_size, page_token=token))

    def iter_instances(self, run_id: str, *, page_size: int = 0) -> AsyncIterator[Instance]:
        return every_item_async(self._transport.run, lambda token: reg.list_instances(
            run_id, page_size=page_size, page_token=token))

    def iter_stores(self, run_id: str, kind: Kind | str | None = None, *,
                    page_size: int = 0) -> AsyncIterator[Store]:
        return every_item_async(self._transport.run, lambda token: ms.list_stores(
            run_id, kind, page_size=page_size, page_token=token))

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
