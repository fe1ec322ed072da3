from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ggmodules.runtime.logging import configure_logging
from tests.harness import BACKENDS, Suite, stubs

# In-process services log like their processes do, but only what a failing test needs.
configure_logging("warning")
# Many tests read ModuleStore's outbox from its start as the record of what happened: the services they
# start keep it whole (a margin no test reaches). Pruning is proven where a test sets its own margin
# (tests/telemetry/test_pruning.py) and measured by `make bench`.
os.environ.setdefault("GGMODULES_OUTBOX_PRUNE_MARGIN", str(10**12))


@pytest.fixture(scope="session", params=BACKENDS)
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    """ModuleStore, Registry and Transfer on each backend: SQLite always, PostgreSQL when a URL is given."""
    s = Suite(request.param, Path(tmp_path_factory.mktemp(f"db-{request.param}")))
    yield s
    s.close()


@pytest.fixture()
def modulestore(suite: Suite) -> Any:
    """ModuleStore's public and internal RPCs, each call carrying the credential a runtime (or, for the
    internal ones, a service) would send (tests/harness/channels.py: AUTO)."""
    return stubs(suite.channel(suite.modulestore.address), "modulestore")


@pytest.fixture()
def registry(suite: Suite) -> Any:
    return stubs(suite.channel(suite.registry.address), "registry")


@pytest.fixture()
def transfer(suite: Suite) -> Any:
    return stubs(suite.channel(suite.transfer.address), "transfer")
