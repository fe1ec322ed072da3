"""The Registry's words for what a holder is bound to. Values match the `ggmodules.common.v1` and
`ggmodules.modulestore.v1` enum numbers, so conversion is a cast."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ggmodules.core.vocabulary import BindAction, MemoryScope, MemoryStrategy, Origin

__all__ = ["BindAction", "Caps", "Cause", "MemoryScope", "MemoryStrategy", "Origin", "RunStatus"]


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
