"""Enumerations of the module domain; numbers match the `ggmodules.common.v1` / `modulestore.v1` enums."""

from __future__ import annotations

import enum


class Origin(enum.IntEnum):
    """How a holder came by its store (R32)."""

    CREATED = 1
    INHERITED = 2
    PROFILE = 3
    RUN = 4
    TRANSFERRED = 5
    FORKED = 6


class BindAction(enum.IntEnum):
    DISABLED = 1
    CREATE = 2
    SHARE = 3
    FORK = 4
    NAMED = 5


class MemoryScope(enum.IntEnum):
    UNSPECIFIED = 0
    INSTANCE = 1
    AGENT = 2
    INHERITED = 3


class MemoryStrategy(enum.IntEnum):
    UNSPECIFIED = 0
    SCRATCHPAD = 1
    MARKDOWN_INDEX = 2


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
