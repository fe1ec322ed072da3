"""Reading the text console back: what `ggmodules console RUN --once` prints for a run, and its sections,
rows and module lines picked out by their structure (the layout itself is pinned by one golden test,
`test_console.py::test_text_console_format`)."""

from __future__ import annotations

import re

from ggmodules.cli.console import follow
from ggmodules.cli.console_text import render
from ggmodules.core.console import ConsoleModel
from ggmodules.core.kinds import Kind
from tests.console.runs import Run

BADGES = ("agent-scoped", "per instance", "handed on", "run-global", "split")


def text_of(run: Run) -> str:
    """What `ggmodules console RUN --once` prints: the run's Subscribe stream folded until it has caught up
    (the first heartbeat), rendered."""
    run.settle()
    for caught_up in follow(run.subscribe(heartbeat_ms=50), ConsoleModel()):
        return render(caught_up)
    raise AssertionError("the stream ended before it caught up")


def section(text: str, title: str) -> list[str]:
    """The lines of one `== title ==` section of the text console."""
    lines = text.splitlines()
    start = lines.index(f"== {title} ==") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("== ")), len(lines))
    return [line for line in lines[start:end] if line]


def agent_rows(text: str) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """The Agents section read back: (profile, kind word) -> (badge word, store ids)."""
    rows: dict[tuple[str, str], tuple[str, list[str]]] = {}
    current = ""
    for line in section(text, "Agents"):
        if not line.startswith(" "):
            current = line.split(":", 1)[0]
            continue
        found = re.match(rf"^\s+(\w+)\s+({'|'.join(BADGES)})\s+(.*)$", line)
        if found:
            rows[(current, found[1])] = (found[2], found[3].split(", "))
    return rows


def module_lines(text: str, agent: str) -> dict[str, str]:
    """An instance folder's module lines in the Instances section: kind word -> the rest of its line."""
    lines = section(text, "Instances")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{agent}  ["))
    out: dict[str, str] = {}
    for line in lines[start + 1 :]:
        if not line.startswith(" "):
            break
        words = line.split()
        if line.startswith("    ") and not line.startswith("     ") and words[0] in [k.word for k in Kind]:
            out[words[0]] = " ".join(words[1:])
    return out
