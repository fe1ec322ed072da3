from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2_grpc
from ggmodules.runtime.logging import configure_logging
from ggmodules.transfer.v1 import transfer_service_pb2_grpc
from tests.harness import BACKENDS, Suite

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
def modulestore(suite: Suite) -> modulestore_service_pb2_grpc.ModuleStoreServiceStub:
    return modulestore_service_pb2_grpc.ModuleStoreServiceStub(suite.channel(suite.modulestore.address))


@pytest.fixture()
def registry(suite: Suite) -> registry_service_pb2_grpc.RegistryServiceStub:
    return registry_service_pb2_grpc.RegistryServiceStub(suite.channel(suite.registry.address))


@pytest.fixture()
def transfer(suite: Suite) -> transfer_service_pb2_grpc.TransferServiceStub:
    return transfer_service_pb2_grpc.TransferServiceStub(suite.channel(suite.transfer.address))
