"""The tests' support package: real services, channels with credentials, refusals, databases, event logs.

Nothing here is mocked: each service is the real grpc.aio server over a real database (a SQLite file, or a
fresh PostgreSQL database when `GGMODULES_TEST_POSTGRES_URL` is set).

- `backends`: `BACKENDS` (every backend-dependent test is parametrised over both; without a PostgreSQL URL
  its case is reported as skipped, with the reason), a fresh database per service (`new_database_url`).
- `event_logs`: Telemetry's event logs to run over (`EVENT_LOGS`: SQL on each backend, NATS JetStream).
- `credentials`: auth is on, as in production (R50): one key pair and one service and operator credential
  per test session (`CREDENTIALS`), and the `WALLET` that picks each call's credential (`AUTO`).
- `channels`: `open_channel(address, credential=AUTO|NONE|<jwt>)`, `stubs(channel, "modulestore")`.
- `services`: one service in-process (`InProcessService`, `InProcessTelemetry`) or as an OS process
  (`ServiceProcess`, `processes`).
- `suite`: `Suite`, the services a test talks to, with options (Transfer or not, Telemetry now or later,
  its retention, recent cache and event log).
- `subscriptions`: Telemetry subscriptions read with a deadline (`Subscription`, `is_write_of`, `shape`).
- `refusals`: one reading of a refusal (`refusal_of`, `refused`, `assert_refused`, `Refusal`).
- `registry`, `modulestore`, `handing`, `transfers`, `console`, `crowd`, `flaky`: builders and flows
  several test folders share (a folder's own helpers sit in its `_support` package).

Every public name of the modules above but the builders is importable from `tests.harness` itself.
"""

from tests.harness.backends import (
    BACKENDS,
    NO_POSTGRES,
    POSTGRES_ONLY,
    POSTGRES_URL,
    _admin,
    drop_database,
    needs_postgres,
    new_database_url,
)
from tests.harness.channels import Stubs, open_aio_channel, open_channel, stubs
from tests.harness.credentials import (
    AUTO,
    CREDENTIALS,
    INTERNAL_PREFIX,
    NONE,
    WALLET,
    TestCredentials,
    TestWallet,
    credit,
    service_config,
)
from tests.harness.refusals import (
    Refusal,
    assert_refused,
    error_info,
    error_metadata,
    refusal_of,
    refused,
    rich_status,
    status_of,
)
from tests.harness.services import (
    ROOT,
    InProcessService,
    InProcessTelemetry,
    LoopThread,
    ServiceProcess,
    processes,
)
from tests.harness.subscriptions import DEADLINE, SPAN, StreamEnded, Subscription, is_write_of
from tests.harness.suite import Suite
from tests.harness.waiting import eventually

__all__ = [
    "AUTO",
    "BACKENDS",
    "CREDENTIALS",
    "DEADLINE",
    "INTERNAL_PREFIX",
    "NONE",
    "NO_POSTGRES",
    "POSTGRES_ONLY",
    "POSTGRES_URL",
    "ROOT",
    "SPAN",
    "WALLET",
    "InProcessService",
    "InProcessTelemetry",
    "LoopThread",
    "Refusal",
    "ServiceProcess",
    "StreamEnded",
    "Stubs",
    "Subscription",
    "Suite",
    "TestCredentials",
    "TestWallet",
    "_admin",
    "assert_refused",
    "credit",
    "drop_database",
    "error_info",
    "error_metadata",
    "eventually",
    "is_write_of",
    "needs_postgres",
    "new_database_url",
    "open_aio_channel",
    "open_channel",
    "processes",
    "refusal_of",
    "refused",
    "rich_status",
    "service_config",
    "status_of",
    "stubs",
]
