"""A service as `ggmodules <service> [flags]` runs it, whose ready line also says how many objects the
cyclic garbage collector has frozen by then (`gc.get_freeze_count()`): `python -m tests.tools.heap modulestore
[flags]` prints `ready modulestore <address> frozen=<n>`. For the start-up heap test (runtime/server.py
`settle_heap`); production never runs this module."""

from __future__ import annotations

import gc
import sys
from typing import Any

# ServiceProcess(..., launcher=LAUNCHER) starts the service through this module.
LAUNCHER = "tests.tools.heap"


class _ReadyLine:
    """stdout, with the frozen-object count added to the ready line as it is written."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def write(self, text: str) -> int:
        if text.startswith("ready "):
            text = f"{text.rstrip()} frozen={gc.get_freeze_count()}\n"
        return int(self._out.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


if __name__ == "__main__":
    from ggmodules.cli.main import main

    sys.stdout = _ReadyLine(sys.stdout)
    main(sys.argv[1:])
