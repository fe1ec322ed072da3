"""Enumerations of the module domain; numbers match the `ggmodules.common.v1` / `modulestore.v1` enums."""

from __future__ import annotations

import enum

from ggmodules.core.vocabulary import BindAction, MemoryScope, MemoryStrategy, Origin, Outcome

__all__ = [
    "BindAction",
    "IssueStatus",
    "MemoryScope",
    "MemoryStrategy",
    "Origin",
    "Outcome",
    "TaskStatus",
]


class TaskStatus(enum.IntEnum):
    OPEN = 1
    IN_PROGRESS = 2
    DONE = 3
    CANCELLED = 4

    @property
    def word(self) -> str:
        return self.name.lower()


class IssueStatus(enum.IntEnum):
    OPEN = 1
    IN_PROGRESS = 2
    DONE = 3
    CLOSED = 4

    @property
    def word(self) -> str:
        return self.name.lower()
