"""A `Plan` is one RPC fully described before it is made: service, method, request, how to read the answer.

Both transports (sync and asyncio) execute plans; everything else (request building, response conversion,
request ids) happens here and in the `*_calls` modules, once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar

from google.protobuf.message import Message

T = TypeVar("T")
U = TypeVar("U")
Service = Literal["registry", "modulestore", "transfer", "telemetry"]
REQUEST_ID_HEADER = "x-request-id"


def new_request_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class Plan(Generic[T]):
    service: Service
    method: str
    request: Message
    convert: Callable[[Any], T]
    mutation: bool = False
    # Identifies a read in the service's log (mutations are identified by their request id).
    call_id: str = field(default_factory=new_request_id)

    @property
    def request_id(self) -> str:
        return str(getattr(self.request, "request_id", "")) if self.mutation else ""

    @property
    def retryable(self) -> bool:
        """Reads are idempotent; a mutation is safe to resend only under the request id it was sent with."""
        return not self.mutation or bool(self.request_id)

    def headers(self, extra: tuple[tuple[str, str], ...] = ()) -> tuple[tuple[str, str], ...]:
        return (*extra, (REQUEST_ID_HEADER, self.request_id or self.call_id))

    def map(self, fn: Callable[[T], U]) -> Plan[U]:
        convert = self.convert
        return Plan(self.service, self.method, self.request, lambda resp: fn(convert(resp)), self.mutation,
                    self.call_id)

    def with_request_id(self, request_id: str) -> Plan[T]:
        """The same mutation under a chosen request id: to the service, a retry of the earlier call."""
        request = type(self.request)()
        request.CopyFrom(self.request)
        request.request_id = request_id  # type: ignore[attr-defined]
        return replace(self, request=request)


def read(service: Service, method: str, request: Message, convert: Callable[[Any], T]) -> Plan[T]:
    return Plan(service, method, request, convert)


def mutation(service: Service, method: str, request: Message, convert: Callable[[Any], T]) -> Plan[T]:
    """A mutation under a fresh request id (R49), which every retry of this plan reuses."""
    request.request_id = new_request_id()  # type: ignore[attr-defined]
    return Plan(service, method, request, convert, mutation=True)


@dataclass(frozen=True)
class ModuleRef:
    """A holder's binding to one store: the acting agent and the store its roster names for a kind."""

    run_id: str
    agent_id: str
    store_id: str
