"""`--only archive`: SearchArchive and archive_thread on SQLite and PostgreSQL
(tests/bench/archive_search.py)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.bench import archive_search
from tests.bench.common import (
    PG_DEFAULT,
)
from tests.harness import (
    drop_database,
    new_database_url,
)


def figures(quick: bool) -> None:
    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    with tempfile.TemporaryDirectory() as tmp:
        backends = [("SQLite", new_database_url("sqlite", "modulestore", Path(tmp)))]
        try:
            backends.append(("PostgreSQL", new_database_url("postgres", "modulestore", Path(tmp), pg_url)))
        except Exception as err:  # a machine without PostgreSQL still gets the SQLite figures
            print(f"(PostgreSQL figures left out: {err})")
        print("\nArchive search (ModuleStore in its own process) — µs unless noted")
        for label, url in backends:
            try:
                archive_search.figures(label, url, quick)
            finally:
                drop_database(url)
