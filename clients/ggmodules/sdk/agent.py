"""An agent: one instance, its roster, and a handle per module it holds.

    planner = gg.open_instance(run.id, "planner")
    planner.history.append("user", "Build a CLI", start_turn=True)
    planner.tasks.create("write the parser")
    copy = planner.fork()
    coder = planner.transition("code").successor       # planner's writes are refused from here on

Also the RPC-method kinds that hand back an agent (`opens`, `transfers`), used here and by the clients.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, Protocol, Self, TypeVar, overload

import grpc

from ggmodules.sdk import modulestore_calls as ms
from ggmodules.sdk import registry_calls as reg
from ggmodules.sdk import telemetry_calls as tel
from ggmodules.sdk import transfer_calls as tr
from ggmodules.sdk.acks import Ack
from ggmodules.sdk.bound import Async, Bound, M, OpBase, Sync, Transport, bound_call, bound_plan, unbound_plan
from ggmodules.sdk.errors import KindNotHeldError
from ggmodules.sdk.handles import (
    ArchiveHandle,
    BoardHandle,
    HistoryHandle,
    MemoriesHandle,
    SkillsHandle,
    TasksHandle,
)
from ggmodules.sdk.plans import ModuleRef, Plan
from ggmodules.sdk.results import Instance, RosterRow, Transfer
from ggmodules.sdk.words import Kind

P = ParamSpec("P")
R = TypeVar("R")

# The RPC methods that answer an agent (open, fork, spawn) or a transfer whose successor is one: they live
# beside the agent classes they hand back, so bound.py need not know them.


class AgentOp(OpBase[P, Instance]):
    """An RPC answering a new or existing instance, handed back as an agent of the caller's mode."""

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, obj: Bound[Sync], owner: type[Any]) -> Callable[P, Agent]: ...
    @overload
    def __get__(self, obj: Bound[Async], owner: type[Any]) -> Callable[P, Awaitable[AsyncAgent]]: ...
    def __get__(self, obj: Bound[Any] | None, owner: type[Any]) -> Any:
        return self if obj is None else self._bind(obj, obj._transport.agent)


class TransferOp(OpBase[P, "Transfer[Any]"]):
    """An RPC answering a transfer, whose successor is handed back as an agent of the caller's mode."""

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, obj: Bound[Sync], owner: type[Any]) -> Callable[P, Transfer[Agent]]: ...
    @overload
    def __get__(
        self, obj: Bound[Async], owner: type[Any]
    ) -> Callable[P, Awaitable[Transfer[AsyncAgent]]]: ...
    def __get__(self, obj: Bound[Any] | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        agent = obj._transport.agent
        return self._bind(obj, lambda transfer: transfer.bind(agent))


def opens(build: Callable[P, Plan[Instance]]) -> AgentOp[P]:
    return AgentOp(unbound_plan(build), build)


def bound_opens(build: Callable[Concatenate[R, P], Plan[Instance]]) -> AgentOp[P]:
    return AgentOp(bound_plan(build), build)


def transfers(build: Callable[P, Plan[Transfer[Any]]]) -> TransferOp[P]:
    return TransferOp(unbound_plan(build), build)


def bound_transfers(build: Callable[Concatenate[R, P], Plan[Transfer[Any]]]) -> TransferOp[P]:
    return TransferOp(bound_plan(build), build)


class _Agent(Bound[M]):
    _ref: Instance

    def __init__(self, transport: Transport, instance: Instance) -> None:
        super().__init__(transport, instance)

    @property
    def instance(self) -> Instance:
        return self._ref

    @property
    def id(self) -> str:
        return self.instance.agent_id

    @property
    def run_id(self) -> str:
        return self.instance.run_id

    @property
    def profile(self) -> str:
        return self.instance.profile

    @property
    def roster(self) -> tuple[RosterRow, ...]:
        return self.instance.roster

    def holds(self, kind: Kind | str) -> bool:
        return self.instance.row(kind).enabled

    def store_id(self, kind: Kind | str) -> str:
        """The store the roster names for a kind; `KindNotHeldError` when the capability is off."""
        row = self.instance.row(kind)
        if not row.enabled:
            raise KindNotHeldError(
                grpc.StatusCode.FAILED_PRECONDITION, KindNotHeldError.REASON,
                f"{self.id} holds no {row.kind.value} module: profile {self.profile!r} turns it off",
                {"agent_id": self.id, "kind": row.kind.value},
            )
        return row.store_id

    def _module(self, kind: Kind) -> ModuleRef:
        return ModuleRef(self.run_id, self.id, self.store_id(kind))

    @property
    def history(self) -> HistoryHandle[M]:
        return HistoryHandle(self._transport, self._module(Kind.HISTORY))

    @property
    def memories(self) -> MemoriesHandle[M]:
        return MemoriesHandle(self._transport, self._module(Kind.MEMORIES))

    @property
    def tasks(self) -> TasksHandle[M]:
        return TasksHandle(self._transport, self._module(Kind.TASKS))

    @property
    def board(self) -> BoardHandle[M]:
        return BoardHandle(self._transport, self._module(Kind.BOARD))

    @property
    def skills(self) -> SkillsHandle[M]:
        return SkillsHandle(self._transport, self._module(Kind.SKILLS))

    @property
    def archive(self) -> ArchiveHandle[M]:
        return ArchiveHandle(self._transport, self._module(Kind.ARCHIVE))

    prompt = bound_call(ms.prompt)
    tools = bound_call(ms.held_tools)
    call_tool = bound_call(ms.agent_call_tool)
    fork = bound_opens(reg.fork)
    spawn = bound_opens(reg.spawn)
    # Hand every module on to a successor (a new agent id, R36); this agent's writes are refused after.
    transition = bound_transfers(tr.agent_transition)
    exec = bound_transfers(tr.agent_exec)
    # Telemetry: this agent's window on a turn, tokens per kind (R43).
    report_turn = bound_call(tel.agent_report_turn)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r}, run={self.run_id!r}, profile={self.profile!r})"


class Agent(_Agent[Sync]):
    """An agent whose calls return their results."""

    def session(self) -> WriteSession:
        """This agent with its writes sent on one ModuleStore `Session` stream (ggmodules.sdk.session):
        `with agent.session() as s: s.history.append(...)`."""
        found: WriteSession = self._transport.session(self.instance)
        return found


class AsyncAgent(_Agent[Async]):
    """An agent whose calls return awaitables."""

    def session(self) -> AsyncWriteSession:
        """This agent with its writes sent on one ModuleStore `Session` stream (ggmodules.sdk.aio_session):
        `async with agent.session() as s: await s.history.append(...)`."""
        found: AsyncWriteSession = self._transport.session(self.instance)
        return found


# ---- write sessions (ggmodules.sdk.session, .aio_session open them: agent.session()) ----------------------


class _Writes(Protocol):
    def abort(self) -> None: ...


class _SyncWrites(_Writes, Protocol):
    def close(self) -> None: ...


class _AsyncWrites(_Writes, Protocol):
    async def close(self) -> None: ...


class _OnSession(Transport, Protocol):
    """A transport that sends the agent's writes on a session (ggmodules.sdk.session.SessionTransport)."""

    @property
    def writes(self) -> _SyncWrites: ...

    def defer(self, fn: Callable[[], R]) -> Ack[R]: ...


class _OnAsyncSession(Transport, Protocol):
    @property
    def writes(self) -> _AsyncWrites: ...


class WriteSession(Agent):
    """The agent, its writes sent on one `Session` stream (see ggmodules.sdk.session's docstring)."""

    _transport: _OnSession

    def __init__(self, transport: _OnSession, instance: Instance) -> None:
        super().__init__(transport, instance)

    def submit(self, write: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> Ack[R]:
        """Sends a write of this session (`s.history.append`, `s.tasks.create`, ...) without waiting for its
        acknowledgement; `.result()` of the answer waits. Anything else is called at once and its result
        handed back as an `Ack` already settled."""
        return self._transport.defer(lambda: write(*args, **kwargs))

    def close(self) -> None:
        """Waits for every write sent to be answered, then ends the session."""
        self._transport.writes.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self._transport.writes.abort()


class AsyncWriteSession(AsyncAgent):
    """The agent, its writes sent on one `Session` stream (see ggmodules.sdk.aio_session's docstring)."""

    _transport: _OnAsyncSession

    def __init__(self, transport: _OnAsyncSession, instance: Instance) -> None:
        super().__init__(transport, instance)

    async def close(self) -> None:
        """Waits for every write sent to be answered, then ends the session."""
        await self._transport.writes.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            await self.close()
        else:
            self._transport.writes.abort()
