from __future__ import annotations

import pytest

from tests.auth._support.runs import Run, start_run
from tests.harness import Suite


@pytest.fixture()
def runs(suite: Suite) -> tuple[Run, Run]:
    """Two runs, each with a writer, a read-only holder and a handed-on agent."""
    return start_run(suite), start_run(suite)
