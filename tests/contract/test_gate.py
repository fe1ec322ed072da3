"""The contract gate (`make contract`, `buf lint`, both run by `make lint` and so by .ci/run).

Each case copies the protos and buf.yaml to a temporary directory, makes one change a reviewer could miss,
and runs the real `buf` the way CI does: removing a field breaks the released contract
(protos/released.binpb), and a field without a comment fails lint (COMMENTS). The untouched copy passes
both, so the committed image is the contract the tree still honours.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import ROOT

BUF = ROOT / ".tools" / "node_modules" / ".bin" / "buf"
IMAGE = ROOT / "protos" / "released.binpb"
REGISTRY_PROTO = Path("protos/ggmodules/registry/v1/registry_service.proto")
GOOGLE_PROTOS = Path("clients/typescript/proto")


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "protos", tmp_path / "protos", ignore=shutil.ignore_patterns("*.py", "*.pyi"))
    shutil.copy(ROOT / "buf.yaml", tmp_path / "buf.yaml")
    # The vendored google/rpc protos (a module of buf.yaml's workspace) that modulestore_service imports.
    shutil.copytree(ROOT / GOOGLE_PROTOS, tmp_path / GOOGLE_PROTOS)
    return tmp_path


def _buf(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BUF), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _edit(path: Path, pattern: str, replacement: str) -> None:
    text = path.read_text()
    edited, count = re.subn(pattern, replacement, text, count=1, flags=re.MULTILINE)
    assert count == 1, f"{pattern!r} not found in {path}"
    path.write_text(edited)


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    assert BUF.exists(), "buf is installed by `make setup` (.tools/)"
    return _copy(tmp_path)


def test_the_tree_honours_the_released_contract_and_lints_clean(tree: Path) -> None:
    breaking = _buf(tree, "breaking", "protos", "--against", str(IMAGE))
    assert breaking.returncode == 0, breaking.stdout + breaking.stderr
    lint = _buf(tree, "lint")
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_deleting_a_released_field_fails_the_gate(tree: Path) -> None:
    # CreateRunRequest.name: a field every client of CreateRun sends.
    _edit(tree / REGISTRY_PROTO, r"(message CreateRunRequest \{[^}]*?)\n\s*string name = 2;", r"\1")
    breaking = _buf(tree, "breaking", "protos", "--against", str(IMAGE))
    assert breaking.returncode != 0
    assert "CreateRunRequest" in breaking.stdout and "name" in breaking.stdout, breaking.stdout


def test_renumbering_a_released_field_fails_the_gate(tree: Path) -> None:
    _edit(tree / REGISTRY_PROTO, r"(message CreateRunRequest \{[^}]*?string name = )2;", r"\g<1>99;")
    breaking = _buf(tree, "breaking", "protos", "--against", str(IMAGE))
    assert breaking.returncode != 0
    assert "CreateRunRequest" in breaking.stdout, breaking.stdout


def test_an_uncommented_field_fails_lint(tree: Path) -> None:
    # A new field, compatible with the released contract, but with nothing said about it.
    _edit(tree / REGISTRY_PROTO, r"^(message CreateRunRequest \{\n)", r"\1  string undocumented = 900;\n")
    assert _buf(tree, "breaking", "protos", "--against", str(IMAGE)).returncode == 0
    lint = _buf(tree, "lint")
    assert lint.returncode != 0
    assert "undocumented" in lint.stdout and "comment" in lint.stdout.lower(), lint.stdout
