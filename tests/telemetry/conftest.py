from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import BACKENDS
from tests.telemetry.rig import Rig


@pytest.fixture(scope="module", params=BACKENDS)
def rig(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """ModuleStore, Registry and Telemetry on each backend, shared by a test module's tests (each test uses
    its own run and filters its streams to it)."""
    r = Rig(request.param, Path(tmp_path_factory.mktemp(f"tel-{request.param}")))
    yield r
    r.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module", params=BACKENDS)
def backend_module(request: pytest.FixtureRequest) -> str:
    return str(request.param)
