from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ggmodules.core.telemetry.streams import Retention
from ggmodules.storage.engine import make_engine
from ggmodules.storage.telemetry import TelemetryRepository
from tests.harness import BACKENDS, Suite, drop_database, new_database_url


@pytest.fixture(scope="module", params=BACKENDS)
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    """ModuleStore, Registry and Telemetry on each backend, shared by a test module's tests (each test uses
    its own run and filters its streams to it): the root conftest's suite with Telemetry started and no
    Transfer, scoped to the module."""
    with Suite(request.param, Path(tmp_path_factory.mktemp(f"tel-{request.param}")), transfer=False,
               telemetry=True) as s:
        yield s


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module", params=BACKENDS)
def backend_module(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def pg_repo(tmp_path: Path) -> Iterator[TelemetryRepository]:
    """A Telemetry log on a PostgreSQL database of its own (10,000 events kept), dropped afterwards; for
    tests marked needs_postgres."""
    url = new_database_url("postgres", "telemetry", tmp_path)
    repository = TelemetryRepository(make_engine(url), Retention(10_000))
    try:
        yield repository
    finally:
        repository.close()
        drop_database(url)
