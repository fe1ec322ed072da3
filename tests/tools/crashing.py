"""The Transfer service with a crash point, for the crash tests: `python -m tests.tools.crashing transfer
[flags]` runs it as `ggmodules transfer [flags]` does, and with GGMODULES_TRANSFER_CRASH_AFTER_STEP=N in its
environment the process kills itself (SIGKILL) when a transfer reaches crash point N (core.transfer.saga:
0 asked, 1 planned and reserved in Registry but not yet journaled, 2 reserved, 3 handed over, 4 completed,
before answering). Production never reads that variable: the hook reaches the service through
`build_service(after_step=...)` only from here."""

from __future__ import annotations

import functools
import os
import signal
import sys

CRASH = "GGMODULES_TRANSFER_CRASH_AFTER_STEP"
# ServiceProcess(..., launcher=LAUNCHER) starts the service through this module.
LAUNCHER = "tests.tools.crashing"


def crash_at(step: int | None) -> None:
    """Not returning: serves Transfer until SIGTERM, or until a transfer reaches crash point `step`."""
    from ggmodules.cli.main import run_service
    from ggmodules.server.transfer import app

    def after_step(point: int) -> None:
        if step is not None and point == step:
            sys.stderr.write(f'{{"event": "crash point {point}: killing the process"}}\n')
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    run_service("transfer", sys.argv[2:], build=functools.partial(app.build_service, after_step=after_step))


if __name__ == "__main__":
    if sys.argv[1:2] != ["transfer"]:
        sys.exit("usage: python -m tests.tools.crashing transfer [flags]")
    value = os.environ.get(CRASH, "").strip()
    crash_at(int(value) if value else None)
