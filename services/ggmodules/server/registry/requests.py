"""Request ids (R49): the key a mutation's answer is recorded under."""

from __future__ import annotations

from typing import Protocol

from ggmodules.storage.idempotency import fingerprint
from ggmodules.storage.registry import RequestKey


class Mutation(Protocol):
    @property
    def request_id(self) -> str: ...

    def SerializeToString(self, *, deterministic: bool = ...) -> bytes: ...


def request_key(method: str, request: Mutation) -> RequestKey | None:
    """None when the caller sent no request id: the call is then applied as a new request."""
    if not request.request_id:
        return None
    return RequestKey(method, request.request_id, fingerprint(request.SerializeToString(deterministic=True)))
