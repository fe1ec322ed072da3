"""Telemetry's event logs for tests: which ones to run over, and a JetStream stream no other test shares.

`EVENT_LOGS` parametrises a test over the SQL log on SQLite, the SQL log on PostgreSQL and NATS JetStream.
JetStream runs when GGMODULES_TEST_NATS_URL is set or a server answers at 127.0.0.1:4222 (`.ci/run` starts
one); otherwise its case is reported as skipped, with the reason, like the PostgreSQL ones.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.harness.backends import NO_POSTGRES, POSTGRES_URL

LOCAL_NATS = "nats://127.0.0.1:4222"


def _nats_url() -> str:
    given = os.environ.get("GGMODULES_TEST_NATS_URL", "")
    if given:
        return given
    try:
        socket.create_connection(("127.0.0.1", 4222), timeout=1).close()
    except OSError:
        return ""
    return LOCAL_NATS


NATS_URL = _nats_url()
NO_NATS = (
    "no NATS server (GGMODULES_TEST_NATS_URL unset, nothing at 127.0.0.1:4222): the JetStream case is not run"
)
needs_nats = pytest.mark.skipif(not NATS_URL, reason=NO_NATS)
EVENT_LOGS = [
    pytest.param(("sqlite", "sql"), id="sql-sqlite"),
    pytest.param(
        ("postgres", "sql"), id="sql-postgres", marks=pytest.mark.skipif(not POSTGRES_URL, reason=NO_POSTGRES)
    ),
    pytest.param(("sqlite", "jetstream"), id="jetstream", marks=needs_nats),
]


def fresh_jetstream_url() -> str:
    """A nats:// event-log URL naming a stream and subject prefix of its own (drop it with `drop_stream`)."""
    tag = uuid.uuid4().hex[:12]
    return f"{NATS_URL}?stream=GGM_TEST_{tag}&prefix=ggmtest.{tag}"


def drop_stream(url: str) -> None:
    """Deletes the stream an event-log URL names (nothing if it is not there)."""
    import nats
    from nats.js.errors import NotFoundError

    stream = parse_qs(urlsplit(url).query)["stream"][0]

    async def drop() -> None:
        nc = await nats.connect(url.split("?")[0])
        try:
            await nc.jetstream().delete_stream(stream)
        except NotFoundError:
            pass
        finally:
            await nc.close()

    asyncio.run(drop())
