from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import ROOT

TS_CLIENT = ROOT / "clients" / "typescript"


@pytest.fixture(scope="session")
def ts_client() -> Path:
    """clients/typescript compiled with tsc (a type error fails the test): the path of its dist/."""
    assert shutil.which("node"), "Node.js 20+ must be on PATH to run the TypeScript client"
    tsc = TS_CLIENT / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), "clients/typescript/node_modules is missing: run `make setup`"
    built = subprocess.run([str(tsc), "-p", str(TS_CLIENT / "tsconfig.json")], capture_output=True, text=True,
                           timeout=180, check=False)
    assert built.returncode == 0, f"tsc failed:\n{built.stdout}\n{built.stderr}"
    return TS_CLIENT / "dist"
