"""Transfer's own words. Values match the `ggmodules.transfer.v1` enums, so conversion is a cast."""

from __future__ import annotations

import enum

from ggmodules.core.vocabulary import Outcome

__all__ = ["Outcome", "TransferKind", "TransferState"]


class TransferKind(enum.IntEnum):
    TRANSITION = 1
    EXEC = 2

    @property
    def cause(self) -> str:
        """The word the successor's roster event and instance carry."""
        return self.name.lower()


class TransferState(enum.IntEnum):
    PENDING = 1
    COMPLETED = 2
    FAILED = 3
