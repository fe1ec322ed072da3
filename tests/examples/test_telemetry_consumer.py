"""examples/telemetry_consumer.py follows a run's stream; started again, it resumes after its saved cursor."""

from __future__ import annotations

from pathlib import Path

from examples.telemetry_consumer import consume
from ggmodules.sdk import Client, Profile
from ggmodules.telemetry.v1 import telemetry_pb2
from tests.harness import Suite


def test_r33_the_consumer_prints_each_event_once_across_two_runs_of_it(suite: Suite, tmp_path: Path) -> None:
    cursor_file = tmp_path / "telemetry.cursor"
    with Client(suite.registry.address, suite.modulestore.address, suite.transfer.address,
                suite.telemetry.address) as gg:
        run = gg.create_run("consumer", [Profile("planner", tasks=True)])
        planner = gg.open_instance(run.id, "planner")
        planner.tasks.create("first")
        planner.report_turn(1, {"history": 10, "tasks": 5})

        first: list[str] = []
        seen: set[str] = set()

        def turn_and_write(item: telemetry_pb2.StreamEvent) -> bool:
            # Telemetry's log orders a report it took itself and the writes it ingested as they arrive.
            seen.add(item.event.WhichOneof("body") or "")
            return {"turn", "write"} <= seen

        last = consume(gg, run.id, cursor_file, first.append, until=turn_and_write)
        assert cursor_file.read_text() == str(last)
        assert first[0].endswith("- run")
        assert any(line.endswith("planner-0 roster (open) as planner") for line in first)
        assert any(line.endswith("write create_task on tasks-0") for line in first)
        turn = f"planner-0 turn 1: {planner.store_id('history')} 10, tasks-0 5"
        assert any(line.endswith(turn) for line in first)

        planner.tasks.create("second")  # while the consumer is not running
        second: list[str] = []
        consume(gg, run.id, cursor_file, second.append, until=lambda e: e.event.HasField("write"))
    assert not set(first) & set(second), "an event was handled twice"
    assert second[-1].endswith("write create_task on tasks-0")
    assert all(int(line.split()[0]) > last for line in second)
