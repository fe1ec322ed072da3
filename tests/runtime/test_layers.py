"""The layers import downwards only: server → usecases → storage → wire → core. Storage encodes no events
(it appends what the use cases built) and wire converts no storage records (issue 13)."""

from __future__ import annotations

import ast
from pathlib import Path

import ggmodules.core

PACKAGE = Path(ggmodules.core.__file__).parent.parent
# Layer → the layers it may not import.
FORBIDDEN = {
    "storage": ("wire", "usecases", "server", "runtime"),
    "wire": ("storage", "usecases", "server", "runtime"),
    "usecases": ("server", "runtime"),
}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_storage_wire_and_usecases_import_only_the_layers_below_them() -> None:
    wrong = []
    for layer, below_not in FORBIDDEN.items():
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for module in sorted(_imports(path)):
                if any(module == f"ggmodules.{x}" or module.startswith(f"ggmodules.{x}.") for x in below_not):
                    wrong.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert wrong == []
