from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import ROOT

TS_CLIENT = ROOT / "clients" / "typescript"


@pytest.fixture(scope="session")
def ts_client() -> Path:
    """clients/typescript compiled with tsc (a type error fails the test): the path of its dist/ (under
    pytest-xdist, a folder of the worker's own inside it, so no worker runs files another is rewriting)."""
    assert shutil.which("node"), "Node.js 20+ must be on PATH to run the TypeScript client"
    tsc = TS_CLIENT / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), "clients/typescript/node_modules is missing: run `make setup`"
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    out = TS_CLIENT / "dist" / f"tests-{worker}" if worker else TS_CLIENT / "dist"
    built = subprocess.run([str(tsc), "-p", str(TS_CLIENT / "tsconfig.json"), "--outDir", str(out)],
                           capture_output=True, text=True, timeout=180, check=False)
    assert built.returncode == 0, f"tsc failed:\n{built.stdout}\n{built.stderr}"
    return out
