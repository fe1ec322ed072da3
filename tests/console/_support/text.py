"""Reading the terminal console back: what `ggmodules console RUN --once` prints for a run (drawn with rich
from the Inspect RPCs), and its sections, rows and module lines picked out by their structure (the layout
itself is pinned by one golden test, `test_console.py::test_text_console_format`)."""

from __future__ import annotations

import re

from ggmodules.cli.console import read_views
from ggmodules.cli.console_text import render_text
from ggmodules.core.kinds import Kind
from tests.harness.console import Run

BADGES = ("agent-scoped", "per instance", "handed on", "run-global", "split")
# The tree's guides, four characters a level: "├── ", "└── ", "│   ", "    ".
GUIDE = re.compile(r"^((?:[├└]── |│   |    ))")


def text_of(run: Run) -> str:
    """What `ggmodules console RUN --once` prints once Telemetry has caught up with the run."""
    run.settle()
    return render_text(run.run_id, read_views(run.stubs.telemetry, run.run_id))


def section(text: str, title: str) -> list[str]:
    """The lines of one `== title ==` section of the text console."""
    lines = text.splitlines()
    start = lines.index(f"== {title} ==") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("== ")), len(lines))
    return [line for line in lines[start:end] if line]


def level(line: str) -> tuple[int, str]:
    """A tree line's depth (0 for an instance) and its text without the guides."""
    depth = 0
    while (found := GUIDE.match(line)) is not None:
        line, depth = line[len(found[1]):], depth + 1
    return depth, line


def plain(lines: list[str]) -> list[str]:
    return [level(line)[1] for line in lines]


def cells(line: str) -> list[str]:
    """A table row's cells."""
    return [c.strip() for c in line.strip().strip("│┃").replace("┃", "│").split("│")]


def agent_rows(text: str) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """The Agents section read back: (profile, kind word) -> (badge word, store ids)."""
    rows: dict[tuple[str, str], tuple[str, list[str]]] = {}
    current = ""
    for line in section(text, "Agents"):
        if line[0] not in "┏┃┡│└":
            current = line.split(":", 1)[0]
        elif line.startswith("│"):
            kind, badge, stores, *_ = cells(line)
            if badge in BADGES:
                rows[(current, kind)] = (badge, stores.split(", "))
    return rows


def module_lines(text: str, agent: str) -> dict[str, str]:
    """An instance folder's module lines in the Instances section: kind word -> the rest of its line."""
    lines = section(text, "Instances")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{agent}  ["))
    out: dict[str, str] = {}
    for line in lines[start + 1 :]:
        depth, rest = level(line)
        if depth == 0:
            break
        words = rest.split()
        if depth == 2 and words and words[0] in [k.word for k in Kind]:
            out[words[0]] = " ".join(words[1:])
    return out
