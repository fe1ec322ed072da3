"""One API surface for both the sync and the asyncio client.

Client, agent and module-handle classes are written once, generic over a mode (`Sync` or `Async`). Each
RPC method is declared as `name = call(builder)`, where the builder is a pure function returning a `Plan`.
Reading the attribute off an object binds the builder to that object's transport: in `Sync` mode the
call returns the result, in `Async` mode an awaitable of it. Type checkers see both exactly.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, Self, TypeVar, overload

from ggmodules.sdk.config import ClientConfig, RetryPolicy
from ggmodules.sdk.credentials import Wallet
from ggmodules.sdk.plans import Plan
from ggmodules.sdk.results import Instance

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")


class Sync:
    """Mode marker: calls return their results."""


class Async:
    """Mode marker: calls return awaitables of their results."""


M = TypeVar("M", Sync, Async)
_UNSET: Any = object()


class Transport(Protocol):
    """What executes plans: `ggmodules.sdk.transport.SyncTransport` or `.aio_transport.AsyncTransport`."""

    # The credentials held (ggmodules.sdk.credentials.Wallet), shared with every derived transport.
    wallet: Wallet

    @property
    def config(self) -> ClientConfig: ...

    def run(self, plan: Plan[Any]) -> Any: ...

    def agent(self, instance: Instance) -> Any: ...

    def session(self, instance: Instance) -> Any: ...

    def derive(self, config: ClientConfig) -> Transport: ...


class Bound(Generic[M]):
    """Something calls are made through: a transport and the reference (agent, store) they are bound to."""

    def __init__(self, transport: Transport, ref: Any = None) -> None:
        self._transport = transport
        self._ref = ref

    @property
    def config(self) -> ClientConfig:
        return self._transport.config

    def with_options(
        self,
        *,
        timeout: float | None = _UNSET,
        metadata: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
    ) -> Self:
        """The same object on the same channels, calling with another deadline, extra metadata or retry
        policy. Handles and agents it hands out inherit the options."""
        current: ClientConfig = self._transport.config
        changes: dict[str, Any] = {}
        if timeout is not _UNSET:
            changes["timeout"] = timeout
        if metadata is not None:
            extra: tuple[tuple[str, str], ...] = tuple(metadata.items())
            changes["metadata"] = (*current.metadata, *extra)
        if retry is not None:
            changes["retry"] = retry
        derived = copy.copy(self)
        derived._transport = self._transport.derive(replace(current, **changes))
        return derived


class OpBase(Generic[P, T]):
    """An RPC method: a plan builder, bound on attribute access to its object's transport."""

    def __init__(self, plan: Callable[Concatenate[Bound[Any], P], Plan[Any]],
                 doc: Callable[..., Any]) -> None:
        self._plan = plan
        self._doc = doc

    def _bind(self, obj: Bound[Any], wrap: Callable[[Any], Any] | None) -> Callable[..., Any]:
        plan, transport = self._plan, obj._transport

        def bound(*args: Any, **kwargs: Any) -> Any:
            p = plan(obj, *args, **kwargs)
            return transport.run(p if wrap is None else p.map(wrap))

        bound.__name__, bound.__doc__ = self._doc.__name__, self._doc.__doc__
        return bound


class Op(OpBase[P, T]):
    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, obj: Bound[Sync], owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: Bound[Async], owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, obj: Bound[Any] | None, owner: type[Any]) -> Any:
        return self if obj is None else self._bind(obj, None)


def unbound_plan(build: Callable[P, Plan[T]]) -> Callable[Concatenate[Bound[Any], P], Plan[T]]:
    def plan(_obj: Bound[Any], /, *args: P.args, **kwargs: P.kwargs) -> Plan[T]:
        return build(*args, **kwargs)

    return plan


def bound_plan(build: Callable[Concatenate[R, P], Plan[T]]) -> Callable[Concatenate[Bound[Any], P], Plan[T]]:
    def plan(obj: Bound[Any], /, *args: P.args, **kwargs: P.kwargs) -> Plan[T]:
        return build(obj._ref, *args, **kwargs)

    return plan


def call(build: Callable[P, Plan[T]]) -> Op[P, T]:
    """An RPC method made of a builder taking the caller's arguments."""
    return Op(unbound_plan(build), build)


def bound_call(build: Callable[Concatenate[R, P], Plan[T]]) -> Op[P, T]:
    """An RPC method whose builder also takes the object's reference (an `Instance`, a `ModuleRef`)."""
    return Op(bound_plan(build), build)
