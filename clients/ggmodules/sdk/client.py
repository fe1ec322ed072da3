"""`Client` (sync) and `AsyncClient` (asyncio): every Registry and Transfer RPC, ModuleStore reads and tools.

    with Client(registry="127.0.0.1:50051", modulestore="127.0.0.1:50052", transfer="127.0.0.1:50053") as gg:
        run = gg.create_run("demo", [Profile("planner", tasks=True)], board=True)
        planner = gg.open_instance(run.id, "planner")

Writes go through an agent's module handles (`planner.history.append(...)`), made as that agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ggmodules.sdk import modulestore_calls as ms
from ggmodules.sdk import registry_calls as reg
from ggmodules.sdk import transfer_calls as tr
from ggmodules.sdk.aio_transport import AsyncTransport
from ggmodules.sdk.bound import Async, Bound, M, Sync, call, opens, transfers
from ggmodules.sdk.config import ClientConfig
from ggmodules.sdk.transport import SyncTransport


def _config(registry: str | None, modulestore: str | None, transfer: str | None,
            config: ClientConfig | None) -> ClientConfig:
    """Without a config: `ClientConfig.from_env()`, so the operator credential and the CA that `ggmodules up`
    wrote under ./var/ are used as they are."""
    config = config or ClientConfig.from_env()
    return replace(config, registry=registry or config.registry,
                   modulestore=modulestore or config.modulestore, transfer=transfer or config.transfer)


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

    def add_credential(self, run_id: str, agent_id: str, credential: str) -> None:
        """Holds an agent's credential received elsewhere (e.g. from another process that opened it), so
        `agent(run_id, agent_id)` writes as that agent. Credentials in this client's own answers are kept
        without this."""
        self._transport.wallet.add_agent(run_id, agent_id, credential)


class Client(_Client[Sync]):
    """Sync client. Addresses default to `ggmodules up`'s; every call has the config's deadline."""

    _transport: SyncTransport

    def __init__(self, registry: str | None = None, modulestore: str | None = None,
                 transfer: str | None = None, *, config: ClientConfig | None = None,
                 interceptors: Sequence[Any] = ()) -> None:
        """`interceptors`: `grpc.UnaryUnaryClientInterceptor`s, applied to every channel."""
        super().__init__(SyncTransport(_config(registry, modulestore, transfer, config), interceptors))

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
                 transfer: str | None = None, *, config: ClientConfig | None = None,
                 interceptors: Sequence[Any] = ()) -> None:
        """`interceptors`: `grpc.aio.UnaryUnaryClientInterceptor`s, applied to every channel."""
        super().__init__(AsyncTransport(_config(registry, modulestore, transfer, config), interceptors))

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
