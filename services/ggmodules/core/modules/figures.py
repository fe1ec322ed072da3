"""What a store reports about itself, and the limits it is held to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Figures:
    """Items count what the kind holds (messages, entries, tasks, issues, read-set skills, threads)."""

    items: int = 0
    bytes: int = 0
    writes: int = 0


@dataclass(frozen=True, slots=True)
class Caps:
    """Zero means unlimited."""

    max_items: int = 0
    max_bytes: int = 0


def text_bytes(*texts: str) -> int:
    return sum(len(t.encode()) for t in texts)
