"""Positions and sizes past 2^31 (R47, R48): every sequence, cursor and counter is 64-bit, so a request
naming one gets a normal answer or a specific refusal on both backends, never INTERNAL (PostgreSQL's
"integer out of range"), and the outbox keeps numbering events past 2^31."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2
from ggmodules.common.v1 import outbox_service_pb2 as opb
from ggmodules.internal.v1 import outbox_service_pb2_grpc as opb_grpc
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.storage.engine import make_engine
from ggmodules.storage.migrations import migrate
from ggmodules.storage.modulestore.tables import MsOutbox, MsStreamHead
from ggmodules.storage.outbox import Outbox
from tests.harness import BACKENDS, Suite, assert_refused, drop_database, new_database_url, status_of, stubs
from tests.harness.modulestore import Stub, append, new_run, open_agent
from tests.harness.registry import create_run, module, open_instance, profile, store_ids

BEYOND = 2**40


def test_r47_get_store_after_a_seq_past_2_31_is_an_empty_page(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    append(modulestore, agent, "one")
    page = modulestore.GetStore(
        svc.GetStoreRequest(
            run_id=agent.run_id, store_id=agent[c.KIND_HISTORY], agent_id=agent.agent_id, after_seq=BEYOND
        )
    )
    assert list(page.contents.history.messages) == []
    assert page.contents.history.message_count == 1


def test_r47_read_outbox_after_an_origin_seq_past_2_31_is_an_empty_page(modulestore: Stub) -> None:
    open_agent(modulestore, new_run(), "coder-0")
    page = modulestore.ReadOutbox(svc.ReadOutboxRequest(after_origin_seq=BEYOND))
    assert list(page.events) == [] and page.head_origin_seq > 0


@pytest.mark.parametrize("service", ["modulestore", "registry"])
def test_r47_watch_outbox_after_an_origin_seq_past_2_31_is_an_idle_stream(suite: Suite, service: str) -> None:
    stub = opb_grpc.OutboxServiceStub(suite.channel(getattr(suite, service).address))
    call = stub.WatchOutbox(opb.WatchOutboxRequest(after_origin_seq=BEYOND, heartbeat_ms=50), timeout=30)
    try:
        heartbeat = next(call)
    finally:
        call.cancel()
    assert list(heartbeat.events) == [] and heartbeat.head_origin_seq == BEYOND


def test_r47_a_negative_position_is_refused_naming_its_field(suite: Suite, modulestore: Stub) -> None:
    """GetStore's after_seq and the outboxes' after_origin_seq had read a negative position as 0 (from the
    start), while Telemetry's Subscribe refused a negative after_cursor: each is refused now, nothing read."""
    agent = open_agent(modulestore, new_run(), "coder-0")
    append(modulestore, agent, "one")
    watch = {s: opb_grpc.OutboxServiceStub(suite.channel(getattr(suite, s).address)).WatchOutbox
             for s in ("modulestore", "registry")}  # fmt: skip
    before_start = opb.WatchOutboxRequest(after_origin_seq=-1)
    reads = {
        "GetStore": (lambda: modulestore.GetStore(svc.GetStoreRequest(
            run_id=agent.run_id, store_id=agent[c.KIND_HISTORY], agent_id=agent.agent_id, after_seq=-1)),
            "after_seq"),
        "ReadOutbox": (lambda: modulestore.ReadOutbox(svc.ReadOutboxRequest(after_origin_seq=-5)),
                       "after_origin_seq"),
        **{f"WatchOutbox of {s}": (lambda w=w: next(w(before_start, timeout=30)), "after_origin_seq")
           for s, w in watch.items()},
    }  # fmt: skip
    for name, (read, field) in reads.items():
        refusal = assert_refused(read, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
        assert refusal.metadata.get("field") == field, name
        assert f"{field} -" in refusal.message and "use 0 to read from the start" in refusal.message, name


def test_r47_caps_past_2_31_are_kept(suite: Suite, modulestore: Stub) -> None:
    registry = stubs(suite.channel(suite.registry.address), "registry")
    caps = {"max_items": BEYOND, "max_bytes": BEYOND}
    run = create_run(registry, profile("coder", tasks=module(caps=caps))).run_id
    coder = open_instance(registry, run, "coder")
    store = modulestore.GetStore(
        svc.GetStoreRequest(run_id=run, store_id=store_ids(coder)["tasks"], agent_id=coder.agent_id)
    ).store
    assert (store.caps.max_items, store.caps.max_bytes) == (BEYOND, BEYOND)


def token(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


def test_r47_a_page_token_naming_a_position_past_64_bits_was_not_handed_out(
    suite: Suite, modulestore: Stub
) -> None:
    registry = stubs(suite.channel(suite.registry.address), "registry")
    agent = open_agent(modulestore, new_run(), "coder-0")
    calls = [
        lambda: registry.ListRuns(reg.ListRunsRequest(page_token=token(f"runs|{10**30}"))),
        lambda: modulestore.ListStores(
            svc.ListStoresRequest(run_id=agent.run_id, page_token=token(f"ms1:1:{10**30}"))
        ),
        lambda: modulestore.ListStores(
            svc.ListStoresRequest(run_id=agent.run_id, page_token=token(f"ms1:{BEYOND}:0"))
        ),
    ]
    for call in calls:
        with pytest.raises(grpc.RpcError) as refused:
            call()
        assert status_of(refused.value) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")


@pytest.fixture(params=BACKENDS)
def outbox_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = new_database_url(request.param, "positions", tmp_path)
    engine = make_engine(url)
    migrate(engine, "modulestore")
    yield engine
    engine.dispose()
    drop_database(url)


def test_r48_the_outbox_numbers_events_past_2_31_and_reads_them_back(outbox_db: Engine) -> None:
    outbox = Outbox("modulestore", MsOutbox, MsStreamHead)
    with outbox_db.begin() as conn:
        if conn.dialect.name == "postgresql":  # the next number the sequence hands out
            sequence = "pg_get_serial_sequence('ms_outbox', 'origin_seq')"
            conn.execute(text(f"SELECT setval({sequence}, :v)"), {"v": BEYOND})
        else:  # SQLite numbers a row one past the largest key
            conn.execute(
                text("INSERT INTO ms_outbox VALUES (:v, 'run-x', 'a-0', 1, x'')").bindparams(v=BEYOND)
            )
        appended = outbox.append(conn, event_pb2.Event(run_id="run-x", agent_id="a-0"))
    assert appended.origin_seq == BEYOND + 1
    with outbox_db.connect() as conn:
        page = outbox.read(conn, BEYOND, 10)
    assert [ev.origin_seq for ev in page.events] == [BEYOND + 1] and page.head == BEYOND + 1
