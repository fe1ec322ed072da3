"""R47, R48, R49 under load: sixteen clients at once on one run, writing every kind, forking and handing on
through Transfer (execs and transitions). 96 agents hold the run's board at the end; every worker instance
shares its profile's memories, and every agent the skills catalogue, so most writes re-state themselves on
dozens of streams at once.

Asserted afterwards: no call answered INTERNAL or UNKNOWN, and every call ended in an answer (a call
answered ABORTED is retried with the same request id, which the refusal asks for); every acknowledged
write is in its store; every agent stream is exactly its events: stream_seq 1..n without a hole or a
repeat, each acknowledged write's event once on its writer's stream, each agent's roster event once and
first.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ggmodules.common.v1 import event_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.transfer.v1 import transfer_service_pb2_grpc as tr_grpc
from tests.harness import Suite, stubs
from tests.harness.crowd import SIX, Client, Tally, crowd, crowd_run
from tests.harness.transfers import markers

CLIENTS = 16
SPAWNS = 3  # per client: 16 roots and 48 subagents hold the board before the rounds start
ROUNDS = 8  # per client: 3 writes each, and a fork (2 in all), an exec or a transition (4) in three of four
BORN = CLIENTS * (1 + SPAWNS + 2 + 4)  # opened, spawned, forked, successors
HOLDING = CLIENTS * (1 + SPAWNS + 2)  # a successor takes its predecessor's place


def _outbox(modulestore: Any, run_id: str) -> list[event_pb2.Event]:
    events: list[event_pb2.Event] = []
    after = 0
    while True:
        page = modulestore.ReadOutbox(
            svc.ReadOutboxRequest(after_origin_seq=after, page_size=100, run_id=run_id)
        )
        if not page.events:
            return events
        events.extend(page.events)
        after = page.events[-1].origin_seq


def test_r47_r48_r49_sixteen_clients_on_one_board_lose_nothing_and_never_see_internal(suite: Suite) -> None:
    registry = stubs(suite.channel(suite.registry.address), "registry")
    modulestore = stubs(suite.channel(suite.modulestore.address), "modulestore")
    run_id = crowd_run(registry)
    tally = Tally()
    clients = [
        Client(n, run_id, (
            stubs(suite.channel(suite.registry.address), "registry"),
            stubs(suite.channel(suite.modulestore.address), "modulestore"),
            tr_grpc.TransferServiceStub(suite.channel(suite.transfer.address)),
        ), tally)
        for n in range(CLIENTS)
    ]
    crowd(clients, lambda client: client.open(SPAWNS))
    crowd(clients, lambda client: client.rounds(ROUNDS))

    print(f"\n{suite.backend}: {sum(tally.codes.values())} answers {dict(tally.codes)}")
    assert tally.defects == 0, f"INTERNAL/UNKNOWN answers: {tally.failures[:10]}"
    assert tally.failures == []
    assert len(set(tally.agents)) == len(tally.agents) == BORN

    # Every acknowledged write is in the store it was written to.
    by_store: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for ack in tally.writes:
        by_store[ack.store_id].append((ack.word, ack.marker))
    assert {ack.word for ack in tally.writes} == set(SIX)
    for store_id, acks in by_store.items():
        got = modulestore.GetStore(svc.GetStoreRequest(run_id=run_id, store_id=store_id, page_size=1000))
        present = set(markers(got.contents, acks[0][0]))
        assert [m for _, m in acks if m not in present] == [], store_id
        if acks[0][0] == "board":
            assert sum(h.active for h in got.store.holders) == HOLDING

    # Every stream is contiguous from 1, and holds each of its events once.
    events = _outbox(modulestore, run_id)
    assert len({e.origin_seq for e in events}) == len(events)
    streams: dict[str, list[event_pb2.Event]] = defaultdict(list)
    for e in events:
        streams[e.agent_id].append(e)
    for agent_id, stream in streams.items():
        assert sorted(e.stream_seq for e in stream) == list(range(1, len(stream) + 1)), agent_id
    for agent_id in tally.agents:
        first = min(streams[agent_id], key=lambda e: e.stream_seq)
        rosters = [e for e in streams[agent_id] if e.WhichOneof("body") == "roster"]
        assert len(rosters) == 1 and first is rosters[0], agent_id
    write_events = [e for e in events if e.WhichOneof("body") == "write"]
    assert Counter((e.agent_id, e.store_id) for e in write_events) == Counter(
        (a.agent_id, a.store_id) for a in tally.writes
    )
    seen: dict[tuple[str, str], list[list[str]]] = defaultdict(list)
    for e in write_events:
        seen[(e.agent_id, e.store_id)].append(_markers_in(e))
    for a in tally.writes:
        carrying = [found for found in seen[(a.agent_id, a.store_id)] if a.marker in found]
        # History and archive events carry what the write added; the other kinds the contents after it.
        assert len(carrying) == 1 if a.word in ("history", "archive") else carrying, a


def _markers_in(event: event_pb2.Event) -> list[str]:
    """The markers in a write event's delta."""
    delta = event.write.delta
    word = delta.WhichOneof("contents") or ""
    return markers(delta, word) if word else []
