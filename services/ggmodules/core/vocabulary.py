"""The words every service's domain shares (one definition each). Numbers match the `ggmodules.common.v1`,
`ggmodules.modulestore.v1`, `ggmodules.registry.v1` and `ggmodules.transfer.v1` enums, so conversion to and
from the wire is a cast; `Cause` is a word (the contracts carry it as a string, and as `common.v1.
InstanceCause` beside it on roster events). The six kinds are `ggmodules.core.kinds`; what a holder is
bound to (caps, bindings, bind plans, roster rows) is `ggmodules.core.roster`."""

from __future__ import annotations

import enum
from collections.abc import Collection

from ggmodules.core.errors import InvalidArgument


class Origin(enum.IntEnum):
    """How a holder came by its store (R32). UNSPECIFIED in a binding: the action's default origin."""

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
    """How a store is bound to a new holder (`modulestore.v1.BindAction`)."""

    DISABLED = 1
    CREATE = 2
    SHARE = 3
    FORK = 4
    NAMED = 5


class Outcome(enum.IntEnum):
    """What a transfer did with one kind (R21), `common.v1.Outcome`."""

    UNSPECIFIED = 0
    CARRIED = 1
    DROPPED = 2
    REINITIALIZED = 3
    FRESH = 4


class Cause(enum.StrEnum):
    """Why an instance exists: the word its roster event, its Registry instance and the bind and handover
    requests carry. Declared in `common.v1.InstanceCause` order (`number`)."""

    UNSPECIFIED = ""
    OPEN = "open"
    SPAWN = "spawn"
    FORK = "fork"
    TRANSITION = "transition"
    EXEC = "exec"

    @property
    def word(self) -> str:
        return self.value

    @property
    def number(self) -> int:
        """The `common.v1.InstanceCause` number."""
        return _NUMBERS[self]


_NUMBERS = {cause: n for n, cause in enumerate(Cause)}
# The causes of a transfer successor (R36).
TRANSFER_CAUSES: tuple[Cause, ...] = (Cause.TRANSITION, Cause.EXEC)
CAUSES: tuple[Cause, ...] = tuple(c for c in Cause if c is not Cause.UNSPECIFIED)


def cause_from_word(word: str, *, among: Collection[Cause] = CAUSES, field: str = "cause") -> Cause:
    """The cause a word names; "" is UNSPECIFIED; any other word, or a cause not `among` those a request
    may carry, is refused naming the valid ones."""
    if not word:
        return Cause.UNSPECIFIED
    cause = next((c for c in among if c.value == word), None)
    if cause is None:
        valid = ", ".join(c.word for c in among)
        message = f"{field} must be one of {valid}, not {word!r}"
        raise InvalidArgument(message, metadata={"field": field}, violations=[(field, message)])
    return cause


class RunStatus(enum.IntEnum):
    """`registry.v1.RunStatus`."""

    RUNNING = 1
    FINISHED = 2
    INTERNAL_ERROR = 3

    @property
    def word(self) -> str:
        return self.name.lower()


class TransferKind(enum.IntEnum):
    """`transfer.v1.TransferKind`."""

    TRANSITION = 1
    EXEC = 2

    @property
    def cause(self) -> Cause:
        """The cause the successor's roster event and instance carry."""
        return Cause(self.name.lower())


class TransferState(enum.IntEnum):
    """`transfer.v1.TransferState`."""

    PENDING = 1
    COMPLETED = 2
    FAILED = 3
