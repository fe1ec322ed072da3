"""R50 with R47: a caller is identified before its input is judged. A call without a valid credential is
refused UNAUTHENTICATED whatever it sends, so an anonymous caller cannot probe which of its fields are
malformed; once the credential is verified, malformed input gets its own INVALID_ARGUMENT as before.
(Before, the input check ran first and answered an anonymous caller INVALID_FIELD / MALFORMED_REQUEST.)"""

from __future__ import annotations

import uuid

import grpc

from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import CREDENTIALS, NONE, Suite, assert_refused, stubs

WRITE = "/ggmodules.modulestore.v1.ModuleStoreService/Write"
BAD_ID = "agent\x00with-a-NUL"  # not one line of printable characters (core/ids.py)


def bad_write() -> svc.WriteRequest:
    return svc.WriteRequest(request_id=uuid.uuid4().hex, run_id="r" * 8, agent_id=BAD_ID, store_id="s" * 8)


def test_r50_an_anonymous_malformed_request_is_unauthenticated(suite: Suite) -> None:
    anonymous = suite.channel(suite.modulestore.address, NONE)
    write = stubs(anonymous, "modulestore").Write
    assert_refused(
        lambda: write(bad_write(), timeout=20),
        grpc.StatusCode.UNAUTHENTICATED, "CREDENTIAL_MISSING",
    )
    undecodable = anonymous.unary_unary(WRITE)
    assert_refused(
        lambda: undecodable(b"\xff\xff\xff\xff", timeout=20),
        grpc.StatusCode.UNAUTHENTICATED, "CREDENTIAL_MISSING",
    )
    forged = suite.channel(suite.modulestore.address, "not.a.credential")
    assert_refused(
        lambda: stubs(forged, "modulestore").Write(bad_write(), timeout=20),
        grpc.StatusCode.UNAUTHENTICATED, "CREDENTIAL_MALFORMED",
    )


def test_r50_a_verified_callers_malformed_request_is_invalid_argument(suite: Suite) -> None:
    operator = suite.channel(suite.modulestore.address, CREDENTIALS.operator)
    assert_refused(
        lambda: stubs(operator, "modulestore").Write(bad_write(), timeout=20),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD",
    )
    undecodable = operator.unary_unary(WRITE)
    assert_refused(
        lambda: undecodable(b"\xff\xff\xff\xff", timeout=20),
        grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST",
    )
