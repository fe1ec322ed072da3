"""A write session (sync): an agent's writes over one ModuleStore `Session` stream.

    with agent.session() as s:
        s.history.append("user", "Build a CLI")          # returns once the write is durable
        task = s.tasks.create("write the parser")        # every handle works as on the agent
        acks = [s.submit(s.history.append, "assistant", part) for part in parts]   # pipelined
        results = [ack.result() for ack in acks]         # each once durable, in the order sent

A `WriteSession` is the agent (its handles, reads and tools unchanged) with its writes sent on one stream
instead of one call each: a write returns when its durable acknowledgement arrives, or raises the typed
error Write would raise. `submit` sends a write without waiting and hands back an `Ack`; leaving the block
waits for every write sent. The session is safe to share between threads; answers keep the order sent.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

import grpc
from grpc_status import rpc_status

from ggmodules.sdk.acks import Ack
from ggmodules.sdk.agent import Agent, WriteSession
from ggmodules.sdk.bound import Transport
from ggmodules.sdk.config import ClientConfig
from ggmodules.sdk.errors import GGModulesError, error_from_status
from ggmodules.sdk.plans import Plan
from ggmodules.sdk.results import Instance
from ggmodules.sdk.session_calls import ended_early, message, on_session, outcome, reconnects

T = TypeVar("T")


class UnaryTransport(Transport, Protocol):
    """The transport a session's other calls go on (ggmodules.sdk.transport.SyncTransport), which opens the
    stream; a Protocol so this module need not import the transport that imports it."""

    def open_session(self, requests: Iterator[Any], run_id: str, agent_id: str) -> Any: ...

    def agent(self, instance: Instance) -> Agent: ...

    def session(self, instance: Instance) -> WriteSession: ...

    def derive(self, config: ClientConfig) -> UnaryTransport: ...

_END = object()


class _Writes:
    """The stream: writes put on it in order, answers read back in order by whoever waits for one."""

    def __init__(self, transport: UnaryTransport, run_id: str, agent_id: str) -> None:
        self._transport, self._run_id, self._agent_id = transport, run_id, agent_id
        self._send_lock, self._read_lock = threading.Lock(), threading.Lock()
        self._pending: deque[Ack[Any]] = deque()
        self._broken: GGModulesError | None = None
        self._closed = False
        # The pauses left before new sessions after the latest break (None: no break since the last answer).
        self._pauses: Iterator[float] | None = None
        self._open()

    def _open(self) -> None:
        self._outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        requests: Iterator[Any] = iter(self._outbox.get, _END)
        self._answers = self._transport.open_session(requests, self._run_id, self._agent_id)

    @property
    def config(self) -> ClientConfig:
        return self._transport.config

    def send(self, plan: Plan[T]) -> Ack[T]:
        with self._send_lock:
            if self._broken is not None:
                raise self._broken
            if self._closed:
                raise RuntimeError("the write session is closed; open another with agent.session()")
            ack = Ack(self, plan)
            self._pending.append(ack)
            self._outbox.put(message(plan))
        return ack

    def wait(self, ack: Ack[Any]) -> None:
        with self._read_lock:
            while not ack.done():
                self._read_one()

    def _read_one(self) -> None:
        try:
            answer = next(self._answers)
        except StopIteration:
            self._break(ended_early())
            return
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNAVAILABLE and self._reopen():
                return
            self._break(_typed(err))
            return
        self._pauses = None  # answered: a later break starts the policy's attempts afresh
        ack = self._pending.popleft()
        assert ack.plan is not None
        ack.settle(*outcome(ack.plan, answer))

    def _reopen(self) -> bool:
        """A new session after a break, the unanswered writes sent again in order (same request ids)."""
        if self._pauses is None:
            self._pauses = reconnects(self.config)
        pause = next(self._pauses, None)
        if pause is None:
            return False
        time.sleep(pause)
        with self._send_lock:
            self._open()
            for ack in self._pending:
                assert ack.plan is not None
                self._outbox.put(message(ack.plan))
            if self._closed:
                self._outbox.put(_END)
        return True

    def _break(self, error: GGModulesError) -> None:
        with self._send_lock:
            self._broken = error
            while self._pending:
                self._pending.popleft().settle(None, error)

    def close(self) -> None:
        """Half-closes the stream, waits for every write sent to be answered, then for the stream's end."""
        with self._send_lock:
            if self._closed:
                return
            self._closed = True
            self._outbox.put(_END)
        with self._read_lock:
            while self._pending:
                self._read_one()
            if self._broken is None:
                with contextlib.suppress(grpc.RpcError):  # the stream's end: the service is done with it
                    for _ in self._answers:
                        pass

    def abort(self) -> None:
        """Cancels the stream: writes not yet answered fail (those applied stay applied)."""
        with self._send_lock:
            self._closed = True
        self._answers.cancel()
        self._break(error_from_status(grpc.StatusCode.CANCELLED, "the write session was cancelled", None))


def _typed(err: grpc.RpcError) -> GGModulesError:
    try:
        status = rpc_status.from_call(err)
    except ValueError:
        status = None
    return error_from_status(err.code(), err.details() or "", status)


class SessionTransport:
    """The agent's transport with its writes sent on the session; everything else on the unary transport."""

    def __init__(self, base: UnaryTransport, writes: _Writes) -> None:
        self.base, self.writes = base, writes
        self.wallet = base.wallet
        self._local = threading.local()

    @property
    def config(self) -> ClientConfig:
        return self.base.config

    def run(self, plan: Plan[T]) -> Any:
        if not on_session(plan):
            return self.base.run(plan)
        ack = self.writes.send(plan)
        deferred: list[Ack[Any]] | None = getattr(self._local, "deferred", None)
        if deferred is not None:
            deferred.append(ack)
            return ack
        return ack.result()

    def defer(self, fn: Callable[[], T]) -> Ack[T]:
        sent: list[Ack[T]] = []
        self._local.deferred = sent
        try:
            value = fn()
        finally:
            self._local.deferred = None
        return sent[-1] if sent else Ack.resolved(value)

    def agent(self, instance: Instance) -> Agent:
        return self.base.agent(instance)

    def session(self, instance: Instance) -> WriteSession:
        return self.base.session(instance)

    def derive(self, config: ClientConfig) -> SessionTransport:
        return SessionTransport(self.base.derive(config), self.writes)


def open_session(transport: UnaryTransport, instance: Instance) -> WriteSession:
    """The agent `instance` with its writes on a new session over `transport` (the stream opens with the
    first write)."""
    writes = _Writes(transport, instance.run_id, instance.agent_id)
    return WriteSession(SessionTransport(transport, writes), instance)
