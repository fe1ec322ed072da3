"""Stream filters and the cursor contract (R33).

Every event Telemetry stores gets a cursor that increases along its whole log, so it increases along every
filtered stream too. A subscriber resumes after the last cursor it saw. Retention prunes the oldest events;
`pruned_through` is the highest cursor ever pruned, so a subscriber positioned before it would miss events
and is refused rather than silently skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from ggmodules.core.errors import InvalidArgument, OutOfRange
from ggmodules.core.modules import pages


@dataclass(frozen=True, slots=True)
class StreamFilter:
    """Empty run: every run. Run only: one run. Run and agent: one agent's stream."""

    run_id: str = ""
    agent_id: str = ""

    @classmethod
    def of(cls, run_id: str, agent_id: str) -> StreamFilter:
        if agent_id and not run_id:
            raise InvalidArgument(
                "agent_id needs its run_id: an agent's stream is named by both",
                metadata={"field": "run_id"},
                violations=[("run_id", "required when agent_id is set")],
            )
        return cls(run_id, agent_id)


def start_position(after_cursor: int, pruned_through: int) -> int:
    """Where a new subscription starts reading (exclusive). 0 means from the oldest retained."""
    pages.after("after_cursor", after_cursor, "start from the oldest retained event")
    if after_cursor == 0:
        return pruned_through
    check_retained(after_cursor, pruned_through)
    return after_cursor


def check_retained(position: int, pruned_through: int) -> None:
    """Refuses a position some of whose later events were already pruned."""
    if position < pruned_through:
        oldest = pruned_through + 1
        raise OutOfRange(
            f"cursor {position} is older than what Telemetry retains; the oldest available cursor is "
            f"{oldest}: resume with after_cursor {oldest - 1} (or 0) and expect a gap",
            metadata={"cursor": str(position), "oldest_cursor": str(oldest)},
        )


@dataclass(frozen=True, slots=True)
class Retention:
    """Keep the newest `events`, and (when set) at most `max_bytes` of payload and nothing stored more than
    `max_age_seconds` ago (on JetStream these go onto the stream's config); prune in steps of at most
    `slack` so pruning is not paid per event."""

    events: int
    max_bytes: int | None = None
    max_age_seconds: float | None = None

    @property
    def slack(self) -> int:
        return min(self.events // 100, 1000)

    @property
    def byte_slack(self) -> int:
        return 0 if self.max_bytes is None else self.max_bytes // 100

    def excess(self, stored: int) -> int:
        """How many of the oldest events to prune now, given `stored` events held."""
        over = stored - self.events
        return over if over > self.slack else 0

    def excess_bytes(self, stored_bytes: int) -> int:
        """How many payload bytes of the oldest events to prune now, given `stored_bytes` held."""
        if self.max_bytes is None:
            return 0
        over = stored_bytes - self.max_bytes
        return over if over > self.byte_slack else 0
