"""Concurrent callers: writers of one store take turns (no lost or doubled seq), and racing first binds
of a named store mint it once (R14: one board per run)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from tests.harness.modulestore import Stub, append, b, bind, contents, new_run, open_agent


def test_concurrent_appends_to_one_window_get_distinct_contiguous_seqs(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    with ThreadPoolExecutor(8) as pool:
        seqs = list(pool.map(lambda i: append(modulestore, agent, f"m{i}").last_seq, range(64)))
    assert sorted(seqs) == list(range(1, 65))
    history = contents(modulestore, agent, c.KIND_HISTORY)
    assert history.store.figures.items == 64 and history.store.figures.writes == 64
    assert sorted(m.content for m in history.contents.history.messages) == sorted(f"m{i}" for i in range(64))


def test_r14_racing_first_binds_mint_one_board(modulestore: Stub) -> None:
    run = new_run()

    def open_one(i: int) -> str:
        return bind(modulestore, run, f"coder-{i}", [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(c.KIND_BOARD, ms.BIND_ACTION_NAMED, named_key="run/board", origin=c.ORIGIN_RUN)])[c.KIND_BOARD]

    with ThreadPoolExecutor(8) as pool:
        boards = set(pool.map(open_one, range(8)))
    assert boards == {"board-0"}
