"""On PostgreSQL every service's connections store long values (a store's state, a long message, an event's
payload) compressed with lz4 where the server has it, not pglz: a small write to a board of 1.9 MB of text
took 170 ms with pglz and 44 ms with lz4 (`make bench ARGS="--only store-size"`), because every write to a
board rewrites its state. A server without lz4 keeps pglz and the services run as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import Suite
from tests.harness.backends import needs_postgres, psycopg_dsn
from tests.harness.modulestore import append, new_run, open_agent, write

pytestmark = needs_postgres

# Made-up text a compressor can shrink, as prose: long enough to be stored out of line (TOAST).
TEXT = " ".join(f"word{n % 997}" for n in range(20_000))


@pytest.fixture()
def suite(tmp_path: Path) -> Iterator[Suite]:
    with Suite("postgres", tmp_path, transfer=False) as s:
        yield s


def test_long_values_are_stored_with_lz4_where_the_server_has_it(suite: Suite) -> None:
    agent = open_agent(suite.ms, new_run(), "coder-0")
    append(suite.ms, agent, TEXT)
    write(suite.ms, agent, c.KIND_TASKS, create_task=svc.CreateTask(title="t", description=TEXT))
    with psycopg.connect(psycopg_dsn(suite.urls["modulestore"])) as db:
        row = db.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        ).fetchone()
        expected = "lz4" if row is not None and row[0] else "pglz"
        methods = db.execute(
            "SELECT (SELECT pg_column_compression(content) FROM ms_messages WHERE store_id = %s), "
            "(SELECT pg_column_compression(state) FROM ms_stores WHERE store_id = %s)",
            (agent[c.KIND_HISTORY], agent[c.KIND_TASKS]),
        ).fetchone()
    assert methods == (expected, expected)
