"""Who is calling. The one place a run-scoped credential (R50) will be read from the call's metadata."""

from __future__ import annotations

import grpc

from ggmodules.core.registry.identity import Caller


def caller_of(context: grpc.aio.ServicerContext) -> Caller:
    # No credentials yet: every caller may act in every run.
    return Caller()
