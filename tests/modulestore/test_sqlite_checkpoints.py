"""SQLite WAL checkpoints run on a thread of their own (storage/sqlite_checkpoints.py), not inside the COMMITs
ModuleStore runs on its event loop; durability is the log's, as before (R48: see test_durability.py for
kill -9 after acknowledgement)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ggmodules.storage.engine import make_engine
from ggmodules.storage.modulestore.repository import ModuleStoreRepository
from ggmodules.storage.sqlite_checkpoints import FACTOR, Checkpointer
from tests.harness import eventually


def test_the_thread_checkpoints_what_the_writer_committed(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA synchronous=NORMAL")
    writer.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, body TEXT)")
    checkpoints = Checkpointer(path, writer, every=10)
    try:
        # The writer's own checkpoint moves out to FACTOR times SQLite's default: a bound, no longer the rule.
        assert writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000 * FACTOR
        for n in range(100):
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("INSERT INTO t VALUES (?, ?)", (n, "x" * 500))
            writer.execute("COMMIT")
            checkpoints.committed()
        eventually(lambda: checkpoints.passes >= 1, "the thread's first checkpoint", 10.0)
    finally:
        checkpoints.close()
    # Everything committed is there, whatever was or was not copied into the database file yet.
    assert writer.execute("SELECT count(*) FROM t").fetchone()[0] == 100
    writer.close()
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT count(*), sum(n) FROM t").fetchone() == (100, sum(range(100)))
    reader.close()


def test_a_pinned_modulestore_on_a_file_checkpoints_on_its_own_thread(tmp_path: Path) -> None:
    repo = ModuleStoreRepository(make_engine(f"sqlite:///{tmp_path / 'ms.db'}"), pinned=True)
    try:
        assert repo.transactions._checkpoints is not None
    finally:
        repo.close()
    unpinned = ModuleStoreRepository(make_engine(f"sqlite:///{tmp_path / 'ms2.db'}"), pinned=False)
    try:
        assert unpinned.transactions._checkpoints is None  # commits from threads: SQLite's own checkpoints
    finally:
        unpinned.close()
