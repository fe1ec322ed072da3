"""Bounded growth of Transfer's journal: it is Transfer's request log (R49: the row is its request id's
claim), so a transfer that completed or failed longer ago than the request-log retention window is pruned,
as ModuleStore and Registry forget request ids (runtime/housekeeping.py); a pending one never is. It had kept
every transfer ever made."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from sqlalchemy import insert, select

from ggmodules.core.vocabulary import TransferKind, TransferState
from ggmodules.storage.engine import make_engine
from ggmodules.storage.migrations import migrate
from ggmodules.storage.transfer.repository import now_us, prune_ended
from ggmodules.storage.transfer.tables import TrTransferRow
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from tests.harness import BACKENDS, Suite, drop_database, eventually, new_database_url
from tests.harness.registry import create_run, edge, fsm, open_instance, profile
from tests.harness.transfers import transition

_transfers = TrTransferRow.__table__  # type: ignore[attr-defined]


@pytest.fixture(params=BACKENDS)
def short_window(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Suite]:
    monkeypatch.setenv("GGMODULES_REQUEST_LOG_RETENTION_SECONDS", "1")
    with Suite(request.param, tmp_path) as s:
        yield s


def test_r49_a_transfer_ended_longer_ago_than_the_retention_window_is_pruned(short_window: Suite) -> None:
    s = short_window
    machine = fsm("one", {"one": "before", "two": "after"}, edge("one", "two", "history"))
    run = create_run(s.reg, profile("before"), profile("after"), machine=machine)
    pred = open_instance(s.reg, run.run_id, "before")
    done = transition(s.tr, run.run_id, pred.agent_id, "two", request_id=f"{run.run_id}/t")
    found = s.tr.GetTransfer(tr.GetTransferRequest(run_id=run.run_id, transfer_id=done.transfer_id)).transfer
    assert found.state == done.state and found.successor_agent_id == done.successor_agent_id
    housekeeper = s.transfer.running.service.extra["housekeeper"]

    def forgotten() -> bool:
        s.loop.run(housekeeper.prune_once())
        try:
            s.tr.GetTransfer(tr.GetTransferRequest(run_id=run.run_id, transfer_id=done.transfer_id))
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.NOT_FOUND
            assert "GGMODULES_REQUEST_LOG_RETENTION_SECONDS" in (err.details() or "")  # why it is gone
            return True
        return False

    eventually(forgotten, "the transfer falls out of the 1 s window")


@pytest.mark.parametrize("backend", BACKENDS)
def test_only_ended_transfers_past_the_window_are_pruned_never_a_pending_one(
    backend: str, tmp_path: Path
) -> None:
    url = new_database_url(backend, "transfer", tmp_path)
    engine = make_engine(url)
    try:
        migrate(engine, "transfer")
        day = 86_400 * 1_000_000
        old, new = now_us() - 2 * day, now_us()
        rows = {
            "pending, asked long ago": (TransferState.PENDING, old, 0),
            "completed long ago": (TransferState.COMPLETED, old, old),
            "failed long ago": (TransferState.FAILED, old, old + 1),
            "completed just now": (TransferState.COMPLETED, old, new),
        }
        with engine.begin() as conn:
            for name, (state, created, completed) in rows.items():
                conn.execute(insert(_transfers).values(
                    transfer_id=name, run_id="r", kind=int(TransferKind.EXEC), predecessor_agent_id="a",
                    state=int(state), created_us=created, completed_us=completed))  # fmt: skip
        with engine.begin() as conn:
            assert prune_ended(conn, 86_400, 1) == 1  # the batch bound: the oldest first
            assert prune_ended(conn, 86_400, 100) == 1
            assert prune_ended(conn, 86_400, 100) == 0
        with engine.connect() as conn:
            left = {r[0] for r in conn.execute(select(_transfers.c.transfer_id))}
        assert left == {"pending, asked long ago", "completed just now"}
    finally:
        engine.dispose()
        drop_database(url)
