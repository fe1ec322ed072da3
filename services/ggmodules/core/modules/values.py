"""Task and issue statuses; numbers match the `ggmodules.common.v1` enums. The words the services share
(origin, scope, strategy, bind action, outcome, cause) are `ggmodules.core.vocabulary`."""

from __future__ import annotations

import enum


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
