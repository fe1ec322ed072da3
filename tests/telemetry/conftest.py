from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import BACKENDS, Suite


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
