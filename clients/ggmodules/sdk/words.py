"""The closed vocabularies a runtime meets: kinds, origins, scopes, strategies, statuses.

Each is a `StrEnum` whose values are the plain words the seed uses ("history", "created"), so a result
compares equal to the word and an argument may be either. Proto numbers are looked up by name in the
generated enum (`ORIGIN_CREATED` <-> `Origin.CREATED`), so the two can never drift apart silently.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Self, TypeVar

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.modulestore.v1 import modulestore_pb2
from ggmodules.registry.v1 import registry_pb2
from ggmodules.transfer.v1 import transfer_pb2

W = TypeVar("W", bound="type[Word]")
# Word class -> (generated enum wrapper, prefix of its value names)
_BACKING: dict[type, tuple[Any, str]] = {}


def backed_by(pb_enum: Any, prefix: str) -> Callable[[W], W]:
    def register(cls: W) -> W:
        _BACKING[cls] = (pb_enum, prefix)
        return cls

    return register


class Word(enum.StrEnum):
    """A closed vocabulary backed by a generated proto enum (see `backed_by`)."""

    @classmethod
    def parse(cls, value: str) -> Self:
        """The member a word names; any other word raises `ValueError` naming the valid ones."""
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise ValueError(f"{value!r} is not a {cls.__name__} word; use one of {valid}") from None

    @classmethod
    def from_number(cls, number: int) -> Self | None:
        """The member for a proto number; None for UNSPECIFIED or a number this SDK does not know."""
        pb_enum, prefix = _BACKING[cls]
        try:
            name = pb_enum.Name(number)
        except ValueError:
            return None
        word = name.removeprefix(prefix).lower()
        return cls(word) if word in cls._value2member_map_ else None

    @property
    def number(self) -> int:
        pb_enum, prefix = _BACKING[type(self)]
        return int(pb_enum.Value(prefix + self.name))


@backed_by(common_pb2.Kind, "KIND_")
class Kind(Word):
    """The six kinds (R1), in kind order."""

    HISTORY = "history"
    MEMORIES = "memories"
    TASKS = "tasks"
    BOARD = "board"
    SKILLS = "skills"
    ARCHIVE = "archive"


@backed_by(common_pb2.Origin, "ORIGIN_")
class Origin(Word):
    """How a holder came by its store (R32)."""

    CREATED = "created"
    INHERITED = "inherited"
    PROFILE = "profile"
    RUN = "run"
    TRANSFERRED = "transferred"
    FORKED = "forked"


@backed_by(common_pb2.MemoryScope, "MEMORY_SCOPE_")
class MemoryScope(Word):
    INSTANCE = "instance"
    AGENT = "agent"
    INHERITED = "inherited"


@backed_by(common_pb2.MemoryStrategy, "MEMORY_STRATEGY_")
class MemoryStrategy(Word):
    SCRATCHPAD = "scratchpad"
    MARKDOWN_INDEX = "markdown_index"


@backed_by(module_pb2.TaskStatus, "TASK_STATUS_")
class TaskStatus(Word):
    OPEN = "open"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    CANCELLED = "cancelled"


@backed_by(module_pb2.IssueStatus, "ISSUE_STATUS_")
class IssueStatus(Word):
    OPEN = "open"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    CLOSED = "closed"


@backed_by(registry_pb2.RunStatus, "RUN_STATUS_")
class RunStatus(Word):
    RUNNING = "running"
    FINISHED = "finished"
    INTERNAL_ERROR = "internal_error"


@backed_by(common_pb2.Outcome, "OUTCOME_")
class Outcome(Word):
    """What a transfer did with one kind, as the successor gets it (R21)."""

    CARRIED = "carried"
    DROPPED = "dropped"
    REINITIALIZED = "reinitialized"
    FRESH = "fresh"


@backed_by(transfer_pb2.TransferKind, "TRANSFER_KIND_")
class TransferKind(Word):
    """An FSM `transition` (carries the edge's kinds, R19) or an `exec` (what both profiles have, R20)."""

    TRANSITION = "transition"
    EXEC = "exec"


@backed_by(transfer_pb2.TransferState, "TRANSFER_STATE_")
class TransferState(Word):
    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"


@backed_by(modulestore_pb2.SearchMode, "SEARCH_MODE_")
class SearchMode(Word):
    """How an archive search matches: the full-text index, meaning (embeddings), or both fused."""

    TEXT = "text"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"
