"""SQLite: WAL checkpoints off the event loop.

SQLite checkpoints inside the COMMIT that takes the write-ahead log past `wal_autocheckpoint` pages (1,000
by default): that commit copies the log's pages back into the database file and syncs both files, some
milliseconds (more when the disk is busy) during which a service that commits inline on its event loop
(ModuleStore) serves nothing; spread over the writes, about as much as the rest of a commit.

A `Checkpointer` moves that work to a daemon thread with its own connection: woken every `every` commits,
it runs a PASSIVE checkpoint, which never blocks the writer (sqlite3 releases the GIL while it runs). The
writer's own automatic checkpoint stays, `factor` times further out, as the bound on the log: when it
comes, the thread has already copied nearly everything, so the writer's checkpoint is short, and the log
starts again from its beginning with the next write (as it also does after any checkpoint that caught up
with a pause in the writes). Durability does not change: a commit is acknowledged once it is in the log,
exactly as before (synchronous=NORMAL); a checkpoint only copies committed pages into the database file,
syncing the log first and the file after.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from typing import Any

# Commits between the thread's checkpoints (an append writes some 7-10 pages to the log).
EVERY = 100
# The writer's own automatic checkpoint, in log pages: this many times SQLite's default of 1,000.
FACTOR = 4
_DEFAULT_PAGES = 1000


class Checkpointer:
    """`committed()` after each commit on the writer's connection `writer`; `close()` when done."""

    def __init__(self, database: str, writer: Any, every: int = EVERY, factor: int = FACTOR) -> None:
        writer.execute(f"PRAGMA wal_autocheckpoint={_DEFAULT_PAGES * factor}")
        self._database = database
        self._every = every
        self._since = 0
        self._wake = threading.Event()
        self._stopping = False
        self.passes = 0  # checkpoints run by the thread
        self._thread = threading.Thread(target=self._run, daemon=True, name="sqlite-checkpoint")
        self._thread.start()

    def committed(self) -> None:
        self._since += 1
        if self._since >= self._every:
            self._since = 0
            self._wake.set()

    def _run(self) -> None:
        conn = sqlite3.connect(self._database, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=1000")
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                with contextlib.suppress(sqlite3.Error):  # busy or locked: the next wake-up tries again
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.passes += 1
        finally:
            conn.close()

    def close(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(10)
