"""A PostgreSQL cluster of a test's own (initdb in a temporary directory, a free port), for what the shared
server must not undergo: a crash. `crash()` kills the postmaster and every server process with SIGKILL, as a
power cut would stop them: what was only in the server's shared memory (WAL not yet written) is lost;
`start()` again recovers from the WAL on disk.

The binaries are PostgreSQL's own (GGMODULES_TEST_PG_BIN, default /usr/lib/postgresql/15/bin); run as root
(the test containers), the server runs as the `postgres` user, since PostgreSQL refuses root.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from ggmodules.storage.engine import make_engine
from ggmodules.storage.migrations import migrate

PG_BIN = Path(os.environ.get("GGMODULES_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
needs_pg_binaries = pytest.mark.skipif(
    not (PG_BIN / "initdb").exists(), reason=f"no PostgreSQL binaries in {PG_BIN} (GGMODULES_TEST_PG_BIN)"
)
# For a crash test: the WAL writer wakes every 10 s (the most it may wait), so an unflushed commit stays in
# the server's memory until then or until a synchronous commit flushes it, which is what a crash loses; no
# checkpoint meanwhile.
NO_BACKGROUND_FLUSH = {"wal_writer_delay": "10s", "checkpoint_timeout": "1h", "max_connections": "20"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    """Running (a killed process nobody reaped yet is a zombie: gone for this purpose)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class PrivateCluster:
    def __init__(self, settings: dict[str, str]) -> None:
        """`settings`: server settings (-c name=value) on top of the defaults."""
        self.dir = Path(tempfile.mkdtemp(prefix="ggm-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self._settings = {"listen_addresses": "127.0.0.1", "unix_socket_directories": str(self.dir)}
        self._settings.update(settings)
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._run(PG_BIN / "initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync")

    def _run(self, *argv: object) -> None:
        prefix = ["runuser", "-u", self._user, "--"] if self._user is not None else []
        subprocess.run([*prefix, *map(str, argv)], check=True, capture_output=True, timeout=120)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = " ".join([f"-p {self.port}", *(f"-c {k}={v}" for k, v in self._settings.items())])
        try:
            log = self.dir / "log"
            self._run(PG_BIN / "pg_ctl", "-D", self.data, "-o", options, "-l", log, "-w", "start")
        except subprocess.CalledProcessError as exc:
            log = (self.dir / "log").read_text()[-2000:]
            raise AssertionError(f"the private PostgreSQL did not start: {exc.stderr!r}\n{log}") from exc

    def _server_pids(self) -> list[int]:
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout
        return [postmaster, *map(int, children.split())]

    def crash(self) -> None:
        """Every server process killed at once (SIGKILL); returns once they are gone."""
        pids = self._server_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in pids):
            assert time.monotonic() < deadline, "server processes outlived SIGKILL"
            time.sleep(0.01)  # polling a process's end: no signal to wait on for a non-child
        # The postmaster is a zombie until something reaps it, which the next one would take for alive: its
        # lock files go, as after a power cut.
        (self.data / "postmaster.pid").unlink()
        for left in self.dir.glob(".s.PGSQL.*"):  # its socket and the socket's lock file, likewise
            left.unlink()

    def remove(self) -> None:
        with contextlib.suppress(Exception):
            self._run(PG_BIN / "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def crashable(settings: dict[str, str] = NO_BACKGROUND_FLUSH) -> Iterator[PrivateCluster]:
    """A private cluster started with `settings`, removed afterwards."""
    made = PrivateCluster(settings)
    try:
        made.start()
        yield made
    finally:
        made.remove()


@contextlib.contextmanager
def migrated(cluster: PrivateCluster, service: str) -> Iterator[Engine]:
    """An engine on `cluster`'s database with `service`'s tables, disposed afterwards."""
    engine = make_engine(cluster.url())
    try:
        migrate(engine, service)
        yield engine
    finally:
        engine.dispose()
