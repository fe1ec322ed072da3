"""A streaming telemetry consumer: follows a run's events and keeps its place across restarts.

    python -m examples.telemetry_consumer RUN_ID [--telemetry 127.0.0.1:50054] [--cursor-file PATH]

Prints one line per event (cursor, agent, what happened) as Telemetry serves them. The cursor of the last
event handled is written to `--cursor-file` after each event, so a consumer started again resumes right
after it: nothing is missed, nothing handled twice. While it runs, the SDK's subscription resumes by itself
when Telemetry restarts; if the saved cursor has fallen out of Telemetry's retention, the consumer says how
many events it cannot get back and goes on from the oldest retained one.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from pathlib import Path

from ggmodules.sdk import Client, CursorExpiredError
from ggmodules.telemetry.v1 import telemetry_pb2


def describe(item: telemetry_pb2.StreamEvent) -> str:
    """One line for an event: its cursor, the agent's stream it is on, and what happened."""
    event = item.event
    body = event.WhichOneof("body") or "?"
    what: str = body
    if body == "write":
        what = f"write {event.write.op} on {event.store_id}"
    elif body == "turn":
        what = f"turn {event.turn.turn}: " + ", ".join(f"{m.store_id} {m.tokens}" for m in event.turn.modules)
    elif body == "roster":
        what = f"roster ({event.roster.cause}) as {event.roster.profile}"
    return f"{item.cursor} {event.agent_id or '-'} {what}"


def consume(gg: Client, run_id: str, cursor_file: Path, emit: Callable[[str], None] = print,
            until: Callable[[telemetry_pb2.StreamEvent], bool] = lambda _: False) -> int:
    """Follows `run_id` from the cursor saved in `cursor_file` (none: from the start), calling `emit` with
    a line per event, until `until(event)` is true; returns the last cursor handled."""
    cursor = int(cursor_file.read_text()) if cursor_file.exists() else 0
    while True:
        try:
            with gg.subscribe(run_id, after_cursor=cursor) as stream:
                for item in stream:
                    assert isinstance(item, telemetry_pb2.StreamEvent)
                    emit(describe(item))
                    cursor = item.cursor
                    cursor_file.write_text(str(cursor))
                    if until(item):
                        return cursor
        except CursorExpiredError as expired:
            emit(f"cursor {cursor} is past retention; {expired.oldest_cursor - cursor - 1} events are gone, "
                 f"resuming at {expired.oldest_cursor}")
            cursor = expired.oldest_cursor - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_id")
    parser.add_argument("--telemetry", default="127.0.0.1:50054")
    parser.add_argument("--cursor-file", type=Path, default=Path("telemetry.cursor"))
    args = parser.parse_args()
    with Client(telemetry=args.telemetry) as gg, contextlib.suppress(KeyboardInterrupt):
        consume(gg, args.run_id, args.cursor_file)


if __name__ == "__main__":
    main()
