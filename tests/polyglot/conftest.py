from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import ROOT

TS_CLIENT = ROOT / "clients" / "typescript"


@pytest.fixture(scope="session")
def ts_client(request: pytest.FixtureRequest) -> Path:
    """clients/typescript compiled with tsc (a type error fails the test): the path of its dist/.

    Built once per test run: under pytest-xdist (`make test`) the polyglot modules may run on different
    workers, and a second tsc rewriting dist/ while the other worker's node reads it could hand node a
    half-written file. The first worker builds under an exclusive lock and leaves a stamp of the run's id;
    the others wait on the lock and find the stamp."""
    assert shutil.which("node"), "Node.js 20+ must be on PATH to run the TypeScript client"
    tsc = TS_CLIENT / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), "clients/typescript/node_modules is missing: run `make setup`"
    dist = TS_CLIENT / "dist"
    dist.mkdir(exist_ok=True)
    run = getattr(request.config, "workerinput", {}).get("testrunuid")
    stamp = dist / f".built-{run}" if run else None
    with (dist / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp is None or not stamp.exists():
            built = subprocess.run([str(tsc), "-p", str(TS_CLIENT / "tsconfig.json")], capture_output=True,
                                   text=True, timeout=180, check=False)
            assert built.returncode == 0, f"tsc failed:\n{built.stdout}\n{built.stderr}"
            if stamp is not None:
                for old in dist.glob(".built-*"):
                    old.unlink()
                stamp.touch()
    return dist
