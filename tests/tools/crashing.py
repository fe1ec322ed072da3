"""The Transfer service with a crash point, for the crash tests: `python -m tests.tools.crashing transfer
[flags]` runs it as `ggmodules transfer [flags]` does, and with GGMODULES_TRANSFER_CRASH_AFTER_STEP=N in its
environment the process kills itself (SIGKILL) when a transfer reaches crash point N (core.transfer.saga:
0 asked, 1 planned and reserved in Registry but not yet journaled, 2 reserved, 3 handed over, 4 completed,
before answering). With GGMODULES_TRANSFER_FREEZE_AFTER_STEP=N instead it stops itself (SIGSTOP) there, as
a hung process or a paused host would, and goes on from that point when sent SIGCONT. Production never
reads either variable: the hook reaches the service through `build_service(after_step=...)` only from
here."""

from __future__ import annotations

import functools
import os
import signal
import sys

CRASH = "GGMODULES_TRANSFER_CRASH_AFTER_STEP"
FREEZE = "GGMODULES_TRANSFER_FREEZE_AFTER_STEP"
# ServiceProcess(..., launcher=LAUNCHER) starts the service through this module.
LAUNCHER = "tests.tools.crashing"


def crash_at(step: int | None, freeze: int | None = None) -> None:
    """Not returning: serves Transfer until SIGTERM, or until a transfer reaches crash point `step`; stops
    (SIGSTOP) the first time one reaches point `freeze`."""
    from ggmodules.cli.main import run_service
    from ggmodules.server.transfer import app

    frozen = False

    def after_step(point: int) -> None:
        nonlocal frozen
        if step is not None and point == step:
            sys.stderr.write(f'{{"event": "crash point {point}: killing the process"}}\n')
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if freeze is not None and point == freeze and not frozen:
            frozen = True
            sys.stderr.write(f'{{"event": "crash point {point}: stopping the process"}}\n')
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSTOP)

    run_service("transfer", sys.argv[2:], build=functools.partial(app.build_service, after_step=after_step))


if __name__ == "__main__":
    if sys.argv[1:2] != ["transfer"]:
        sys.exit("usage: python -m tests.tools.crashing transfer [flags]")
    value, stop = os.environ.get(CRASH, "").strip(), os.environ.get(FREEZE, "").strip()
    crash_at(int(value) if value else None, int(stop) if stop else None)
