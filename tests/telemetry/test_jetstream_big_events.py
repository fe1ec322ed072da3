"""R28, R33, R48 on the JetStream log: an event larger than one NATS message (the server's `max_payload`,
1 MiB unless configured otherwise) is stored in parts and reaches subscribers whole, and the events after it
keep flowing (storage/jetstream_parts.py). Before, such an event was refused at every publish and every
later event of its origin waited behind it for good.

Over three set-ups: Telemetry relaying ModuleStore's events, ModuleStore publishing them itself
(runtime/origin_relay.py), and a recent-events cache too small for the event (subscribers read through a
consumer of their own, not the tail's memory).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ggmodules.core.telemetry.streams import StreamFilter
from tests.harness import Suite, is_write_of
from tests.harness.event_logs import drop_stream, fresh_jetstream_url, needs_nats
from tests.harness.registry import create_run, full_profile, open_instance, store_ids
from tests.telemetry.test_big_events import (
    KIB,
    append,
    assert_later_runs_still_arrive,
    assert_whole,
    texts,
    written,
)

pytestmark = needs_nats
SETUPS = {
    "telemetry-relaying": {},
    "modulestore-publishing": {"origin_publishes": True},
    "small-cache": {"recent_bytes": 64 * KIB},
}


@pytest.fixture(scope="module", params=list(SETUPS))
def big(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    url = fresh_jetstream_url()
    options = {"transfer": False, "telemetry": True, "event_log": url, **SETUPS[request.param]}
    with Suite("sqlite", Path(tmp_path_factory.mktemp("big-jetstream")), **options) as s:  # type: ignore[arg-type]
        yield s
    drop_stream(url)


def write_big(suite: Suite) -> tuple[str, list[str]]:
    """A run whose agent wrote one event of 1.25 MB, then "after the big one"; checks the event is over the
    NATS server's max_payload (else this would test nothing)."""
    event_log = suite.telemetry.running.service.extra["event_log"]
    assert event_log._nc.max_payload < 5 * 250 * KIB  # what the server takes in one message
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    history = store_ids(coder)["history"]
    contents = texts("big", 5, 250 * KIB)
    append(suite, run, coder.agent_id, history, contents)
    suite.say(run, coder.agent_id, history, "after the big one")
    return run, contents


def test_r33_an_event_over_one_nats_message_reaches_subscribers_whole_and_later_ones_follow(
    big: Suite,
) -> None:
    run, contents = write_big(big)

    got = big.subscribe(run).until(is_write_of("after the big one"))

    assert written(got) == [contents, ["after the big one"]]
    assert_whole(big, run, got)
    assert_later_runs_still_arrive(big)


def test_r33_resuming_before_or_after_an_event_in_parts_gives_it_once_whole(big: Suite) -> None:
    run, contents = write_big(big)
    got = big.subscribe(run).until(is_write_of("after the big one"))
    (before, _), (at, _) = got[-3], got[-2]  # the event before the big one, and the big one

    from_before = big.subscribe(run, after=before).until(is_write_of("after the big one"))
    from_at = big.subscribe(run, after=at).until(is_write_of("after the big one"))

    assert written(from_before) == [contents, ["after the big one"]]
    assert written(from_at) == [["after the big one"]]


def test_r33_a_read_of_the_log_gives_an_event_in_parts_whole(big: Suite) -> None:
    run, contents = write_big(big)
    big.subscribe(run).until(is_write_of("after the big one"))
    event_log = big.telemetry.running.service.extra["event_log"]

    read = big.loop.run(event_log.read(StreamFilter.of(run, ""), 0, 100))

    assert written([(e.cursor, e.event) for e in read.events])[-2:] == [contents, ["after the big one"]]
