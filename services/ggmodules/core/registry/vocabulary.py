"""The Registry's words for what a holder is bound to. Values match the `ggmodules.common.v1` and
`ggmodules.modulestore.v1` enum numbers, so conversion is a cast."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Origin(enum.IntEnum):
    UNSPECIFIED = 0
    CREATED = 1
    INHERITED = 2
    PROFILE = 3
    RUN = 4
    TRANSFERRED = 5
    FORKED = 6


class MemoryScope(enum.IntEnum):
    UNSPECIFIED = 0
    INSTANCE = 1
    AGENT = 2
    INHERITED = 3


class MemoryStrategy(enum.IntEnum):
    UNSPECIFIED = 0
    SCRATCHPAD = 1
    MARKDOWN_INDEX = 2


class BindAction(enum.IntEnum):
    DISABLED = 1
    CREATE = 2
    SHARE = 3
    FORK = 4
    NAMED = 5


class RunStatus(enum.IntEnum):
    RUNNING = 1
    FINISHED = 2
    INTERNAL_ERROR = 3

    @property
    def word(self) -> str:
        return self.name.lower()


class Cause(enum.StrEnum):
    """Why an instance exists; the word the roster event carries."""

    OPEN = "open"
    SPAWN = "spawn"
    FORK = "fork"


@dataclass(frozen=True)
class Caps:
    """Limits of one store; zero means unlimited."""

    max_items: int = 0
    max_bytes: int = 0
