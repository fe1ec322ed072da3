"""Every outcome for every kind, under transitions and execs, through the real services (R19-R21, R30-R31).

Each case opens a predecessor, writes one recognisable thing into every store it holds, transfers, and then
reads back what the successor got: the outcome and store ids, its roster in Registry, the store contents
through ModuleStore, and the outbox: drains on the predecessor's stream, then the successor's roster, then
one restate per module it holds, and nothing else.
"""

from __future__ import annotations

from typing import Any

import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.registry.v1 import registry_pb2
from tests.harness.registry import create_run, edge, fsm, module, open_instance, profile, rows
from tests.harness.transfers import (
    events_after,
    exec_,
    head,
    holders,
    instance,
    markers,
    outcomes,
    put_everything,
    shape,
    store,
    transition,
)

SIX = ("history", "memories", "tasks", "board", "skills", "archive")
OUTCOMES = ("carried", "dropped", "reinitialized", "fresh")


def _possible(mode: str, word: str, outcome: str) -> bool:
    if outcome == "reinitialized":
        return word == "memories"  # the one shape a store cannot be read under: a memory strategy
    if word == "board":
        return outcome == "carried"  # the run's: carried to every successor in a run that has one
    if word == "history":
        # Always on: never dropped; fresh only when a transition does not carry the window.
        return outcome == "carried" or (outcome == "fresh" and mode == "transition")
    return True


CASES = [(m, w, o) for m in ("transition", "exec") for w in SIX for o in OUTCOMES if _possible(m, w, o)]


def _config(word: str, outcome: str, side: str) -> registry_pb2.ModuleConfig | None:
    """How `side` ("before" or "after") configures `word` for the case; None when it turns it off."""
    off = (side == "before" and outcome == "fresh") or (side == "after" and outcome == "dropped")
    if word in ("history", "board") or off:
        return None
    if word == "memories":
        index = side == "after" and outcome == "reinitialized"
        return module(strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX if index else c.MEMORY_STRATEGY_SCRATCHPAD)
    if word == "skills" and outcome == "carried":
        return module(skills_directory="shared")  # one catalogue: carried as is, not re-pointed
    return module()


def _open(registry: Any, mode: str, word: str, outcome: str) -> tuple[Any, Any]:
    sides = {}
    for side in ("before", "after"):
        config = _config(word, outcome, side)
        sides[side] = profile(side, **({word: config} if config is not None else {}))
    carry = [word] if outcome in ("carried", "reinitialized") and word != "board" else []
    machine = (
        fsm("one", {"one": "before", "two": "after"}, edge("one", "two", *carry))
        if mode == "transition"
        else None
    )
    run = create_run(registry, sides["before"], sides["after"], board=word == "board", machine=machine)
    pred = open_instance(registry, run.run_id, "before")
    return run, pred


@pytest.mark.parametrize(("mode", "word", "outcome"), CASES, ids=["-".join(case) for case in CASES])
def test_r21_outcome_per_kind(
    registry: Any, modulestore: Any, transfer: Any, mode: str, word: str, outcome: str
) -> None:
    run, pred = _open(registry, mode, word, outcome)
    put_everything(modulestore, pred, "from the predecessor")
    since = head(modulestore)

    if mode == "transition":
        done = transition(transfer, run.run_id, pred.agent_id, "two", request_id=f"{run.run_id}/t")
    else:
        done = exec_(transfer, run.run_id, pred.agent_id, "after", request_id=f"{run.run_id}/t")

    before_id = rows(pred)[word].store_id if rows(pred)[word].enabled else ""
    got, before, after = outcomes(done)[word]
    assert (got, before) == (outcome, before_id)
    successor = instance(registry, run.run_id, done.successor_agent_id)
    row = rows(successor)[word]
    assert list(successor.roster) == list(done.roster)
    assert successor.opening_note == done.opening_note
    if outcome == "carried":
        assert after == before_id == row.store_id
        assert row.origin == (c.ORIGIN_RUN if word == "board" else c.ORIGIN_TRANSFERRED)
        seen = markers(store(modulestore, run.run_id, after, successor.agent_id).contents, word)
        assert "from the predecessor" in seen
    elif outcome == "dropped":
        assert (after, row.enabled) == ("", False)
        assert holders(modulestore, run.run_id, before_id) == {pred.agent_id: False}
        assert f"{word} were dropped" in done.opening_note or f"{word} was dropped" in done.opening_note
    else:
        assert after and after != before_id and row.store_id == after
        seen = markers(store(modulestore, run.run_id, after, successor.agent_id).contents, word)
        assert "from the predecessor" not in seen
        assert ("re-initialized" if outcome == "reinitialized" else word) in done.opening_note

    # R30-R31: drains on the predecessor's stream, then the successor's roster, then its restates.
    events = shape(events_after(modulestore, run.run_id, since))
    held = {r.store_id for r in pred.roster if r.enabled}
    kept = {r.store_id for r in successor.roster if r.enabled}
    drains = [(b, a, s) for b, a, s in events if b == "drain"]
    assert events == [
        *drains,
        ("roster", successor.agent_id, ""),
        *[("restate", successor.agent_id, r.store_id) for r in successor.roster if r.enabled],
    ]
    assert sorted(s for _, _, s in drains) == sorted(held - kept)
    assert {a for _, a, _ in drains} <= {pred.agent_id}
    if outcome != "carried" and before_id:
        assert ("drain", pred.agent_id, before_id) in drains
