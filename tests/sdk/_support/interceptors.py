"""Client interceptors that record every attempt the SDK makes (method, metadata, request)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc


@dataclass
class Attempt:
    method: str
    metadata: dict[str, str]
    request: Any
    timeout: float | None = None  # the deadline the call was given, in seconds


def _attempt(details: Any, request: Any) -> Attempt:
    return Attempt(details.method, dict(details.metadata or ()), request, details.timeout)


class Recorder(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self) -> None:
        self.attempts: list[Attempt] = []

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self.attempts.append(_attempt(details, request))
        return continuation(details, request)


class AsyncRecorder(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self) -> None:
        self.attempts: list[Attempt] = []

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self.attempts.append(_attempt(details, request))
        return await continuation(details, request)
