"""What a store reports about itself (its limits are `ggmodules.core.roster.Caps`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Figures:
    """Items count what the kind holds (messages, entries, tasks, issues, read-set skills, threads)."""

    items: int = 0
    bytes: int = 0
    writes: int = 0


def text_bytes(*texts: str) -> int:
    return sum(len(t.encode()) for t in texts)
