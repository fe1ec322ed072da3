"""The test-only crash switch: GGMODULES_TRANSFER_CRASH_AFTER_STEP=N makes the process SIGKILL itself right
after it journals step N (0 asked, 1 planned, 2 reserved, 3 handed over, 4 completed, before answering)."""

from __future__ import annotations

import os
import signal

import structlog


class CrashSwitch:
    def __init__(self, step: int | None, log: structlog.typing.FilteringBoundLogger) -> None:
        self.step = step
        self._log = log

    def after(self, step: int) -> None:
        if self.step is not None and step == self.step:
            self._log.warning("crash switch: killing the process", after_step=step)
            os.kill(os.getpid(), signal.SIGKILL)
