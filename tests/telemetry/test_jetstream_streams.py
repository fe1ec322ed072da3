"""The stream, cursor and turn tests of the SQL log, run again with Telemetry's event log on NATS JetStream
(a stream of this module's own): the same behaviour a user sees, whichever log is configured, and whether
Telemetry relays ModuleStore's events or ModuleStore publishes them itself."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness import Suite
from tests.harness.event_logs import drop_stream, fresh_jetstream_url, needs_nats
from tests.telemetry import test_cursors, test_streams, test_turns

SAME: list[Callable[[Suite], None]] = [
    test_streams.test_r28_a_write_appears_once_on_its_writers_stream,
    test_streams.test_r29_each_co_holder_gets_its_own_snapshot_on_its_own_stream,
    test_streams.test_r13_a_sharer_gets_no_backlog,
    test_streams.test_r12_a_fork_copies_no_pending_event,
    test_streams.test_r32_each_instances_roster_appears_once_and_first,
    test_cursors.test_r33_resume_after_a_cursor_gives_every_later_event_once_in_order,
    test_cursors.test_r33_a_run_stream_and_an_agent_stream_carry_the_same_cursors,
    test_cursors.test_r33_an_idle_stream_carries_heartbeats_with_the_head,
    test_cursors.test_r33_a_cursor_past_2_31_is_an_idle_stream_on_every_backend,
    test_cursors.test_r33_an_agent_filter_without_its_run_is_refused,
    test_cursors.test_report_turn_is_stored_once_on_the_agents_stream,
    test_turns.test_r47_turns_only_go_forward_and_a_repeated_turn_is_already_reported,
    test_turns.test_r47_one_turn_reported_at_once_by_many_is_recorded_once,
]


@pytest.fixture(scope="module")
def jetstream_suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    url = fresh_jetstream_url()
    with Suite("sqlite", Path(tmp_path_factory.mktemp("tel-jetstream")), transfer=False, telemetry=True,
               event_log=url) as s:
        yield s
    drop_stream(url)


@pytest.fixture(scope="module")
def publishing_suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    """ModuleStore publishing its own events to the stream (runtime/origin_relay.py), Telemetry relaying only
    Registry's."""
    url = fresh_jetstream_url()
    directory = Path(tmp_path_factory.mktemp("tel-jetstream-origin"))
    options = {"transfer": False, "telemetry": True, "event_log": url, "origin_publishes": True}
    with Suite("sqlite", directory, **options) as s:  # type: ignore[arg-type]
        yield s
    drop_stream(url)


@needs_nats
@pytest.mark.parametrize("case", SAME, ids=lambda case: case.__name__.removeprefix("test_"))
def test_on_jetstream(case: Callable[[Suite], None], jetstream_suite: Suite) -> None:
    case(jetstream_suite)


@needs_nats
@pytest.mark.parametrize("case", SAME, ids=lambda case: case.__name__.removeprefix("test_"))
def test_on_jetstream_modulestore_publishing(case: Callable[[Suite], None], publishing_suite: Suite) -> None:
    case(publishing_suite)
