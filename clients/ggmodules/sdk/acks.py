"""A write sent on a session (ggmodules.sdk.session) and not yet answered: `result()` waits for it."""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

from ggmodules.sdk.errors import GGModulesError
from ggmodules.sdk.plans import Plan

T = TypeVar("T")


class Waiter(Protocol):
    """Whoever reads the session's answers: waits until `ack` is settled."""

    def wait(self, ack: Ack[Any]) -> None: ...


class Ack(Generic[T]):
    """A write sent on a session; `result()` waits for its durable acknowledgement (or raises its refusal)."""

    def __init__(self, writes: Waiter | None, plan: Plan[T] | None) -> None:
        self._writes, self.plan = writes, plan
        self._done = False
        self._value: Any = None
        self._error: GGModulesError | None = None

    @classmethod
    def resolved(cls, value: T) -> Ack[T]:
        ack: Ack[T] = cls(None, None)
        ack._done, ack._value = True, value
        return ack

    def done(self) -> bool:
        return self._done

    def result(self) -> T:
        if not self._done and self._writes is not None:
            self._writes.wait(self)
        if self._error is not None:
            raise self._error
        value: T = self._value
        return value

    def settle(self, value: Any, error: GGModulesError | None) -> None:
        self._value, self._error, self._done = value, error, True
