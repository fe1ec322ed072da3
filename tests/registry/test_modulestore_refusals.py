"""ModuleStore's refusals reach Registry's caller unchanged: code, reason, message and field violations."""

from __future__ import annotations

import pytest
import structlog

from ggmodules.core.errors import DomainError
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1.modulestore_service_pb2_grpc import ModuleStoreServiceStub as ModuleStoreStub
from ggmodules.runtime.security import Security
from ggmodules.server.registry.binder import ModuleStoreBinder
from tests.harness import CREDENTIALS, Suite, refused


def test_r47_a_modulestore_refusal_is_passed_on_as_modulestore_gave_it(
    suite: Suite, modulestore: ModuleStoreStub
) -> None:
    # No history binding: ModuleStore refuses (R2).
    request = ms.BindInstanceRequest(
        run_id="run-refusals00", agent_id="coder-0", profile="coder", cause="open"
    )
    direct = refused(modulestore.BindInstance, request)
    binder = ModuleStoreBinder(
        suite.modulestore.address, structlog.get_logger(), Security(service_token=CREDENTIALS.service)
    )

    async def bind() -> None:
        try:
            await binder.bind(request)
        finally:
            await binder.close()

    with pytest.raises(DomainError) as caught:
        suite.loop.run(bind())
    passed_on = caught.value
    assert (passed_on.code.value, passed_on.reason.value) == (direct.code.name, direct.reason)
    assert passed_on.message == direct.message
    assert passed_on.violations == direct.violations
