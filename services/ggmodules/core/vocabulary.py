"""Words shared by every service's domain. Numbers match the `ggmodules.common.v1` and
`ggmodules.modulestore.v1` enums, so conversion to and from the wire is a cast."""

from __future__ import annotations

import enum


class Origin(enum.IntEnum):
    """How a holder came by its store (R32)."""

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
