"""Who is calling: the run a verified credential opens (runtime/auth.py), for the handlers' run checks and
for scoping what ListRuns shows. A credential for every run (an operator's, a service's), or auth off,
acts in every run."""

from __future__ import annotations

import grpc

from ggmodules.core.registry.identity import Caller
from ggmodules.runtime.auth import current_principal


def caller_of(context: grpc.aio.ServicerContext) -> Caller:
    who = current_principal()
    if who is None or who.every_run:
        return Caller()
    return Caller(run_id=who.run_id)
