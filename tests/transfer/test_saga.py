"""The transfer saga as a pure function (core.transfer.saga): every state gives its next command, every
outcome its next state, and a transfer resumed from what the journal held at any crash point issues the
same calls under the same request ids (so each is applied once, R27/R49) and ends the same way."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ggmodules.core.transfer import saga
from ggmodules.core.transfer.record import Step, TransferRecord
from ggmodules.core.transfer.saga import Saga
from ggmodules.core.vocabulary import TransferKind, TransferState

NOW = 1_700_000_000_000_000
PLANNED = saga.Planned("coder-0", "coder", "code", "plan", b"plan-bytes", "history arrived")


def asked(kind: TransferKind = TransferKind.TRANSITION) -> TransferRecord:
    if kind is TransferKind.TRANSITION:
        return saga.asked("transfer-1", "req", "hash", "run-1", kind, "planner-0", NOW - 5, to_state="code")
    return saga.asked("transfer-1", "req", "hash", "run-1", kind, "planner-0", NOW - 5,
                      successor_profile="coder", leave_fsm=True)


def answer(command: saga.Command) -> saga.Outcome:
    """What each service answers on the happy path (the same on a repeat: the request id makes it so)."""
    if isinstance(command, saga.Plan):
        return PLANNED
    if isinstance(command, saga.Reserve):
        return saga.Reserved("coder-0")
    if isinstance(command, saga.HandOver):
        return saga.HandedOver(b"roster")
    if isinstance(command, saga.Complete):
        return saga.Completed()
    if isinstance(command, saga.Journal):
        return saga.Journaled()
    if isinstance(command, saga.FailRun):
        return saga.Undone(saga.FAIL_RUN)
    if isinstance(command, saga.Release):
        return saga.Undone(saga.RELEASE)
    raise AssertionError(command)


def run(state: Saga, answers: dict[type, saga.Outcome] | None = None, crash_at: int | None = None,
        ) -> tuple[Saga, list[saga.Command], TransferRecord | None]:
    """Drives the saga as the driver does; stops at Finish, or right after crash point `crash_at`
    (returning what the journal holds then)."""
    journal = state.record
    issued: list[saga.Command] = []
    for _ in range(20):
        command = saga.decide(state)
        issued.append(command)
        if isinstance(command, saga.Finish):
            return state, issued, journal
        outcome = (answers or {}).get(type(command)) or answer(command)
        if isinstance(command, saga.Journal):
            journal = command.record
        if crash_at is not None and command.after == crash_at:
            return state, issued, journal
        state = saga.evolve(state, outcome, NOW)
    raise AssertionError(f"no end: {issued}")


def test_a_new_transfer_is_planned_and_reserved_in_one_call_under_a_request_id_of_its_own() -> None:
    command = saga.decide(Saga(asked()))
    assert command == saga.Plan("transfer-1/plan", "run-1", "planner-0", "transition", "code", "", False,
                                after=1)
    exec_plan = saga.decide(Saga(asked(TransferKind.EXEC)))
    assert exec_plan == saga.Plan("transfer-1/plan", "run-1", "planner-0", "exec", "", "coder", True, after=1)


def test_every_step_gives_its_command_then_journals_its_outcome() -> None:
    state = Saga(asked())
    planned = saga.evolve(state, PLANNED, NOW)
    assert not planned.journaled
    r = planned.record
    assert (r.step, r.successor_agent_id, r.successor_profile, r.successor_fsm_state, r.from_state, r.plan,
            r.opening_note) == (Step.RESERVED, "coder-0", "coder", "code", "plan", b"plan-bytes",
                                "history arrived")
    assert saga.decide(planned) == saga.Journal(r, after=2)
    reserved = saga.evolve(planned, saga.Journaled(), NOW)
    assert saga.decide(reserved) == saga.HandOver("transfer-1/handover", b"plan-bytes", "coder-0", after=3)
    handed = saga.evolve(reserved, saga.HandedOver(b"roster"), NOW)
    assert (handed.record.step, handed.record.handover) == (Step.HANDED_OVER, b"roster")
    assert not handed.journaled
    # Journaled with the completion, in one write.
    complete = saga.Complete("transfer-1/complete", "run-1", "coder-0", b"roster", "history arrived")
    assert saga.decide(handed) == complete
    # As an earlier version journaled it, or as the driver did when the completion could not be made.
    assert saga.decide(saga.evolve(handed, saga.Journaled(), NOW)) == complete
    done = saga.evolve(handed, saga.Completed(), NOW)
    assert (done.record.state, done.record.step, done.record.completed_us) == (
        TransferState.COMPLETED, Step.COMPLETED, NOW)
    assert saga.decide(done) == saga.Journal(done.record, after=4)
    assert saga.decide(saga.evolve(done, saga.Journaled(), NOW)) == saga.Finish(done.record)


def test_happy_path_issues_three_calls_and_two_journal_writes_after_the_ask() -> None:
    _, issued, journal = run(Saga(asked()))
    kinds = [type(c).__name__ for c in issued]
    assert kinds == ["Plan", "Journal", "HandOver", "Complete", "Journal", "Finish"]
    assert journal is not None and journal.state is TransferState.COMPLETED


@pytest.mark.parametrize("point", [0, 1, 2, 3, 4])
def test_resumed_after_a_crash_at_each_point_it_repeats_only_what_may_be_repeated(point: int) -> None:
    """The journal as a crash at `point` left it, resumed by a fresh saga: every call it makes carries the
    request id the first attempt used, and the transfer completes exactly as without the crash."""
    first = Saga(asked())
    before: list[saga.Command] = []
    journal: TransferRecord | None = first.record
    if point:
        _, before, journal = run(first, crash_at=point)
    assert journal is not None
    _, after, end = run(Saga(journal))
    _, _, expected = run(Saga(asked()))
    assert end == expected
    calls = [c for c in before + after if not isinstance(c, (saga.Journal, saga.Finish))]
    ids = [getattr(c, "request_id") for c in calls]  # noqa: B009 -- every call has one
    assert set(ids) == {"transfer-1/plan", "transfer-1/handover", "transfer-1/complete"}
    # A step is repeated only when the crash came after it and before its outcome was journaled.
    repeated = {i for i in ids if ids.count(i) > 1}
    assert repeated == {1: {"transfer-1/plan"}, 3: {"transfer-1/handover"}}.get(point, set())
    if point == 4:
        assert [type(c) for c in after] == [saga.Finish]  # completed: nothing left but the answer


def test_a_plan_an_earlier_version_journaled_is_reserved_then_handed_over() -> None:
    legacy = replace(asked(), step=int(Step.PLANNED), successor_profile="coder", successor_fsm_state="code",
                     plan=b"plan-bytes")
    assert saga.decide(Saga(legacy)) == saga.Reserve(
        "transfer-1/reserve", "run-1", "planner-0", "coder", "transition", "code")
    _, issued, end = run(Saga(legacy))
    assert [type(c).__name__ for c in issued][:3] == ["Reserve", "Journal", "HandOver"]
    assert end is not None and end.state is TransferState.COMPLETED and end.successor_agent_id == "coder-0"


def test_a_refused_plan_fails_at_once_with_nothing_to_undo() -> None:
    refused = saga.Refused("FAILED_PRECONDITION", "NO_SUCH_EDGE", "no edge", {"to_state": "code"})
    _, issued, end = run(Saga(asked()), {saga.Plan: refused})
    assert [type(c).__name__ for c in issued] == ["Plan", "Journal", "Finish"]
    assert end is not None
    assert (end.state, end.failure_code, end.failure_reason, end.failure, end.failure_metadata) == (
        TransferState.FAILED, "FAILED_PRECONDITION", "NO_SUCH_EDGE", "no edge", {"to_state": "code"})
    assert issued[1].after is None  # no crash point on the refusal path


def test_a_refused_handover_journals_the_refusal_then_releases_the_reservation() -> None:
    refused = saga.Refused("FAILED_PRECONDITION", "HANDED_ON", "handed on", {})
    _, issued, end = run(Saga(asked()), {saga.HandOver: refused})
    assert [type(c).__name__ for c in issued] == [
        "Plan", "Journal", "HandOver", "Journal", "Release", "Journal", "Finish"]
    refusal = issued[3]
    assert isinstance(refusal, saga.Journal)
    assert refusal.record.state is TransferState.PENDING and refusal.record.failure_reason == "HANDED_ON"
    assert issued[4] == saga.Release("transfer-1/release", "run-1", "coder-0")
    assert end is not None and end.state is TransferState.FAILED


def test_a_kind_the_predecessor_lacks_ends_the_run_then_releases() -> None:
    lacking = saga.Lacking("the exec carries tasks", ("tasks",))
    _, issued, end = run(Saga(asked()), {saga.HandOver: lacking})
    assert [type(c).__name__ for c in issued][3:] == ["Journal", "FailRun", "Release", "Journal", "Finish"]
    fail = issued[4]
    assert isinstance(fail, saga.FailRun) and fail.request_id == "transfer-1/fail-run"
    assert end is not None
    assert (end.failure_code, end.failure_reason) == ("INTERNAL", "RUN_INTERNAL_ERROR")
    assert end.failure_metadata == {"run_id": "run-1", "agent_id": "planner-0", "kinds": "tasks"}
    assert "has ended with status internal_error" in end.failure


def test_a_lacking_plan_ends_the_run_without_a_release() -> None:
    _, issued, end = run(Saga(asked()), {saga.Plan: saga.Lacking("lacks", ("history", "tasks"))})
    assert [type(c).__name__ for c in issued] == ["Plan", "Journal", "FailRun", "Journal", "Finish"]
    assert end is not None and end.failure_metadata["kinds"] == "history,tasks"


def test_a_rollback_interrupted_by_a_crash_is_made_again_from_the_journaled_refusal() -> None:
    failing = replace(asked(), step=int(Step.RESERVED), successor_agent_id="coder-0", failure="handed on",
                      failure_code="FAILED_PRECONDITION", failure_reason="HANDED_ON")
    _, issued, end = run(Saga(failing))
    assert [type(c).__name__ for c in issued] == ["Release", "Journal", "Finish"]
    assert end is not None and end.state is TransferState.FAILED and end.completed_us == NOW


def test_an_ended_transfer_only_answers() -> None:
    for state in (TransferState.COMPLETED, TransferState.FAILED):
        ended = replace(asked(), state=state)
        assert saga.decide(Saga(ended)) == saga.Finish(ended)
