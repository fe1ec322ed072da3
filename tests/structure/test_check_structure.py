"""tools/check_structure.py, the structure step of `make lint`, catches a planted violation of each rule and
names the offending import or file; the tree as it stands passes it (its allow-list aside)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import check_structure
from tools.check_structure import check

ROOT = Path(__file__).resolve().parents[2]


def plant(root: Path, files: dict[str, str]) -> Path:
    """A tree of modules: a clean core, wire and storage, plus `files` (path -> source)."""
    base = {
        "services/ggmodules/core/__init__.py": "",
        "services/ggmodules/core/kinds.py": "import enum\n",
        "services/ggmodules/wire/__init__.py": "",
        "services/ggmodules/wire/codec.py": "from ggmodules.core.kinds import enum\n",
        "services/ggmodules/storage/__init__.py": "",
        "services/ggmodules/storage/rows.py": "import sqlalchemy\nfrom ggmodules.core import kinds\n",
        "clients/ggmodules/sdk/__init__.py": "",
    }
    for path, text in {**base, **files}.items():
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    return root


def findings(root: Path) -> list[str]:
    return [str(v) for v in check(root)]


def test_a_clean_tree_has_no_violation(tmp_path: Path) -> None:
    assert findings(plant(tmp_path, {})) == []


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("import grpc\n", "grpc"),
        ("from sqlalchemy import text\n", "sqlalchemy"),
        ("from sqlmodel import SQLModel\n", "sqlmodel"),
        ("from ggmodules.storage.rows import X\n", "ggmodules.storage.rows"),
        ("def f():\n    from ggmodules.wire import codec\n", "ggmodules.wire.codec"),
        ("from ggmodules.server import app\n", "ggmodules.server"),
        ("import ggmodules.runtime.errors\n", "ggmodules.runtime.errors"),
        ("from ggmodules.web import render\n", "ggmodules.web"),
        ("from ggmodules.cli.main import main\n", "ggmodules.cli.main"),
    ],
)
def test_core_importing_grpc_sql_or_an_outer_layer_is_named(tmp_path: Path, source: str, named: str) -> None:
    root = plant(tmp_path, {"services/ggmodules/core/leaky.py": source})
    [found] = findings(root)
    assert found.startswith("services/ggmodules/core/leaky.py:")
    assert f"core-imports-outer: ggmodules.core.leaky imports {named}" in found


def test_wire_importing_storage_and_storage_importing_wire_are_named(tmp_path: Path) -> None:
    root = plant(tmp_path, {
        "services/ggmodules/wire/records.py": "x = 1\nfrom ggmodules.storage.rows import Row\n",
        "services/ggmodules/storage/events.py": "from ggmodules.wire import codec\n",
    })
    assert sorted(findings(root)) == [
        "services/ggmodules/storage/events.py:1: wire-storage: ggmodules.storage.events imports "
        "ggmodules.wire.codec: wire and storage import nothing of each other",
        "services/ggmodules/wire/records.py:2: wire-storage: ggmodules.wire.records imports "
        "ggmodules.storage.rows: wire and storage import nothing of each other",
    ]


@pytest.mark.parametrize("where", ["services/ggmodules/runtime", "clients/ggmodules/sdk"])
def test_a_two_module_cycle_is_named_even_under_type_checking(tmp_path: Path, where: str) -> None:
    package = where.split("/", 1)[1].replace("/", ".")
    root = plant(tmp_path, {
        f"{where}/__init__.py": "",
        f"{where}/agent.py": f"from {package}.bound import Bound\n",
        f"{where}/bound.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            f"    from {package}.agent import Agent\n"
        ),
    })
    [found] = findings(root)
    assert "import-cycle: 2 modules import each other in a loop" in found
    assert f"{package}.agent -> {package}.bound (line 1)" in found
    assert f"{package}.bound -> {package}.agent (line 3)" in found


def test_a_longer_cycle_through_relative_imports_is_named(tmp_path: Path) -> None:
    root = plant(tmp_path, {
        "services/ggmodules/runtime/__init__.py": "",
        "services/ggmodules/runtime/a.py": "from . import b\n",
        "services/ggmodules/runtime/b.py": "from .c import thing\n",
        "services/ggmodules/runtime/c.py": "import ggmodules.runtime.a\n",
    })
    [found] = findings(root)
    assert "import-cycle: 3 modules import each other in a loop" in found
    for tie in ("runtime.a -> ggmodules.runtime.b", "runtime.b -> ggmodules.runtime.c",
                "runtime.c -> ggmodules.runtime.a"):
        assert tie in found


@pytest.mark.parametrize(
    "path",
    [
        "services/ggmodules/wire/big.py",
        "tests/test_big.py",
        "clients/x/big.py",
        "clients/typescript/src/big.ts",
    ],
)
def test_a_hand_written_module_over_400_lines_is_named_and_generated_code_is_not(
    tmp_path: Path, path: str
) -> None:
    long = "x = 1\n" * 401
    root = plant(tmp_path, {
        path: long,
        "services/ggmodules/wire/ok.py": "x = 1\n" * 400,
        "protos/ggmodules/common/v1/common_pb2.py": long,
        "services/ggmodules/common/v1/common_pb2_grpc.py": long,
        "clients/typescript/src/gen/ggmodules/common/v1/common_pb.ts": long,
        "clients/typescript/node_modules/typescript/lib/lib.d.ts": long,
    })
    assert findings(root) == [
        f"{path}:1: module-size: {path} has 401 lines; "
        "split it into modules of at most 400 lines, one job each"
    ]


def test_the_allow_list_tolerates_only_what_it_names_and_reports_entries_that_no_longer_occur(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = plant(tmp_path, {"services/ggmodules/storage/events.py": "from ggmodules.wire import codec\n"})
    subject = ("wire-storage", "ggmodules.storage.events -> ggmodules.wire.codec")
    monkeypatch.setattr(check_structure, "ALLOWED", {subject: "usecases"})
    assert check_structure.main(["--root", str(root)]) == 0
    assert "allowed until usecases lands" in capsys.readouterr().out
    assert check_structure.main(["--root", str(root), "--no-allow"]) == 1
    (root / "services/ggmodules/storage/events.py").write_text("x = 1\n")
    assert check_structure.main(["--root", str(root)]) == 1
    assert "no longer occurs; remove it from ALLOWED" in capsys.readouterr().out


def test_the_tree_passes_with_its_allow_list() -> None:
    assert check_structure.main(["--root", str(ROOT)]) == 0
