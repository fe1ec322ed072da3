"""Request ids (R49): the key a mutation's answer is recorded under."""

from __future__ import annotations

from google.protobuf.message import Message

from ggmodules.storage.idempotency import RequestKey


def request_key(method: str, request: Message) -> RequestKey | None:
    """None when the caller sent no request id: the call is then applied as a new request."""
    return RequestKey.of(method, request)
