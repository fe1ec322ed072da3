"""The structure rules `make lint` enforces (issue 13), read from the code's own imports and lengths:

- layers: core imports neither gRPC, SQL nor an outer layer (storage, wire, server, runtime, web, cli);
  wire imports no storage and storage no wire;
- cycles: no two (or more) modules of services/ or clients/ import each other in a loop (every import
  counts: at the top, inside a function, under TYPE_CHECKING);
- size: no hand-written module over 400 lines, Python or TypeScript (generated code excluded: *_pb2*, the
  TypeScript client's src/gen; tests included).

Each violation is printed as `path:line: rule: what`, naming the import or the file. ALLOWED lists the
violations known on this branch that another helper's work removes, each with its owner; an entry that no
longer matches a violation is itself reported, so the list only shrinks.

    python tools/check_structure.py [--root DIR]      # exit 1 on any violation
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_LINES = 400
# Source roots whose modules make up the `ggmodules` namespace package, and the other trees whose
# sizes count.
PACKAGE_ROOTS = ("services", "clients")
SIZED_ROOTS = ("services", "clients", "tests", "examples", "tools")
# Generated or installed: the TypeScript client's generated code and build output, packages, caches.
SKIP_PARTS = {"node_modules", "__pycache__", ".venv", "gen", "dist"}
SIZED_SUFFIXES = (".py", ".ts")

CORE = "ggmodules.core"
# What core may not import: gRPC, SQL, and the layers above it.
CORE_FORBIDDEN_TOP = {"grpc", "grpc_status", "grpc_health", "grpc_reflection", "sqlalchemy", "sqlmodel",
                      "alembic", "psycopg"}
OUTER = ("storage", "wire", "server", "runtime", "web", "cli")
CORE_FORBIDDEN = tuple(f"ggmodules.{layer}" for layer in OUTER)
# (importer, imported): neither direction between wire and storage.
APART = (("ggmodules.wire", "ggmodules.storage"), ("ggmodules.storage", "ggmodules.wire"))

# Known violations on this branch, each removed by the named helper's work; the integrator empties this.
# Keys are the rule and the exact subject the violation names.
ALLOWED: dict[tuple[str, str], str] = {
}


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    rule: str
    subject: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.message}"


@dataclass(frozen=True)
class Import:
    importer: str
    path: str
    line: int
    # The module named, resolved against the tree: `from a.b import c` is a.b.c when c is a module.
    target: str


def _module_files(root: Path) -> dict[str, Path]:
    """Every module of the namespace package under the package roots, by dotted name."""
    found: dict[str, Path] = {}
    for base in PACKAGE_ROOTS:
        top = root / base
        if not top.is_dir():
            continue
        for path in sorted(top.rglob("*.py")):
            rel = path.relative_to(top)
            if SKIP_PARTS & set(rel.parts) or not rel.parts or rel.parts[0] != "ggmodules":
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(root: Path, modules: dict[str, Path]) -> list[Import]:
    """Every import of every module, once per (module, line, module named)."""
    return list(dict.fromkeys(_each_import(root, modules)))


def _each_import(root: Path, modules: dict[str, Path]) -> Iterator[Import]:
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        rel = str(path.relative_to(root))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(name, rel, node.lineno, alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    yield Import(name, rel, node.lineno, sub if sub in modules else base)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_violations(imports: Iterable[Import]) -> Iterator[Violation]:
    for imp in imports:
        if _within(imp.importer, CORE):
            top = imp.target.split(".")[0]
            outer = next((p for p in CORE_FORBIDDEN if _within(imp.target, p)), None)
            if top in CORE_FORBIDDEN_TOP or outer:
                yield Violation(
                    imp.path, imp.line, "core-imports-outer", f"{imp.importer} -> {imp.target}",
                    f"{imp.importer} imports {imp.target}: core imports neither gRPC, SQL nor an outer layer "
                    f"({', '.join(OUTER)})",
                )
        for importer, imported in APART:
            if _within(imp.importer, importer) and _within(imp.target, imported):
                yield Violation(
                    imp.path, imp.line, "wire-storage", f"{imp.importer} -> {imp.target}",
                    f"{imp.importer} imports {imp.target}: wire and storage import nothing of each other",
                )


def cycle_violations(imports: list[Import], modules: dict[str, Path], root: Path) -> Iterator[Violation]:
    graph: dict[str, set[str]] = {m: set() for m in modules}
    where: dict[tuple[str, str], Import] = {}
    for imp in imports:
        if imp.target in modules and imp.target != imp.importer:
            graph[imp.importer].add(imp.target)
            where.setdefault((imp.importer, imp.target), imp)
    for component in _strongly_connected(graph):
        if len(component) < 2:
            continue
        members = sorted(component)
        ties = sorted(
            f"{a} -> {b} (line {where[(a, b)].line})"
            for a in members for b in sorted(graph[a]) if b in component
        )
        first = modules[members[0]]
        yield Violation(
            str(first.relative_to(root)), 1, "import-cycle", " ".join(members),
            f"{len(members)} modules import each other in a loop: {'; '.join(ties)}",
        )


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (the graph is a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                out.append(component)
    return out


def size_violations(root: Path) -> Iterator[Violation]:
    for base in SIZED_ROOTS:
        top = root / base
        if not top.is_dir():
            continue
        for path in sorted(p for p in top.rglob("*") if p.suffix in SIZED_SUFFIXES and p.is_file()):
            rel = path.relative_to(root)
            if SKIP_PARTS & set(rel.parts) or "_pb2" in path.name or path.name.endswith(".d.ts"):
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES:
                yield Violation(
                    str(rel), 1, "module-size", str(rel),
                    f"{rel} has {lines} lines; "
                    f"split it into modules of at most {MAX_LINES} lines, one job each",
                )


def check(root: Path) -> list[Violation]:
    modules = _module_files(root)
    imports = _imports(root, modules)
    return [
        *layer_violations(imports),
        *cycle_violations(imports, modules, root),
        *size_violations(root),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--no-allow", action="store_true", help="report the ALLOWED violations too")
    args = parser.parse_args(argv)
    allowed = {} if args.no_allow else ALLOWED
    found = check(args.root)
    failed = [v for v in found if (v.rule, v.subject) not in allowed]
    tolerated = [v for v in found if (v.rule, v.subject) in allowed]
    stale = set(allowed) - {(v.rule, v.subject) for v in found}
    for v in failed:
        print(v)
    for rule, subject in sorted(stale):
        print(f"tools/check_structure.py: allow-list: ({rule}, {subject}) no longer occurs; "
              "remove it from ALLOWED")
    for v in tolerated:
        print(f"allowed until {allowed[(v.rule, v.subject)]} lands: {v}")
    if failed or stale:
        print(f"structure: {len(failed) + len(stale)} violation(s)")
        return 1
    print(f"structure: clean ({len(tolerated)} allowed for now)" if tolerated else "structure: clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
