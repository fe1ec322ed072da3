"""A transfer as a saga: its state in, the next command out (`decide`); a command's outcome in, the next
state out (`evolve`). Pure: no I/O, no clock (the time comes in), no grpc, no SQL. The driver
(server.transfer.driver) runs the commands and feeds their outcomes back.

Forward, each step applied once by request id (R49); kill -9 at any point resumes from the last journaled
step and repeats the steps after it, which their request ids make no-ops:
    ASKED --Plan--> (planned and reserved in Registry) --Journal--> RESERVED --HandOver--> (handed over)
    --Complete--> COMPLETED --Journal-->, then Finish.
The handover and the completion are journaled in one write. A step that cannot be taken now (a service
unreachable) leaves the transfer pending; the driver first journals how far it got (e.g. HANDED_OVER, so
a resume never depends on ModuleStore still remembering the handover's request id).
A refusal before the handover journals the refusal, undoes what was done (ends the run internal_error
for R26, releases the reservation) and journals FAILED; with nothing to undo it journals FAILED at once.
From HANDED_OVER on the transfer only rolls forward. Crash points (`after` on a command, 0-4) name where a
test may kill the process: 0 the journaled ask (the driver's insert), 1 the plan answered but not yet
journaled, 2 reserved, 3 handed over (answered, journaled only with the completion), 4 completed (journaled,
not yet answered).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeAlias

from ggmodules.core.errors import Code, Reason
from ggmodules.core.transfer.record import Step, TransferRecord
from ggmodules.core.vocabulary import Cause, TransferKind, TransferState

FAIL_RUN, RELEASE = "fail-run", "release"


@dataclass(frozen=True)
class Saga:
    record: TransferRecord
    # The journal holds `record` as it is.
    journaled: bool = True
    # Rollback calls made so far (FAIL_RUN, RELEASE); repeated after a crash, each applied once.
    undone: frozenset[str] = frozenset()


# -- commands


@dataclass(frozen=True)
class Plan:
    """Registry plans the transfer and reserves its successor (PlanSuccessor)."""

    request_id: str
    run_id: str
    predecessor_agent_id: str
    cause: Cause
    to_state: str
    profile: str
    leave_fsm: bool
    after: int | None = int(Step.PLANNED)


@dataclass(frozen=True)
class Reserve:
    """Registry reserves the successor of a plan an earlier version journaled (ReserveSuccessor)."""

    request_id: str
    run_id: str
    predecessor_agent_id: str
    profile: str
    cause: Cause
    fsm_state: str
    after: int | None = None


@dataclass(frozen=True)
class HandOver:
    """ModuleStore applies the planned handover to the reserved successor (Handover)."""

    request_id: str
    plan: bytes
    successor_agent_id: str
    after: int | None = None


@dataclass(frozen=True)
class Complete:
    """Registry makes the successor visible with the roster the handover produced (CompleteSuccessor)."""

    request_id: str
    run_id: str
    agent_id: str
    handover: bytes
    opening_note: str
    after: int | None = None


@dataclass(frozen=True)
class FailRun:
    """Registry ends the run internal_error (R26)."""

    request_id: str
    run_id: str
    detail: str
    after: int | None = None


@dataclass(frozen=True)
class Release:
    """Registry drops a reservation whose handover was never applied."""

    request_id: str
    run_id: str
    agent_id: str
    after: int | None = None


@dataclass(frozen=True)
class Journal:
    """Write `record` to the journal (only while this replica holds the transfer's lease)."""

    record: TransferRecord
    after: int | None = None


@dataclass(frozen=True)
class Finish:
    """The transfer has ended: answer with `record`."""

    record: TransferRecord
    after: int | None = None


Command: TypeAlias = Plan | Reserve | HandOver | Complete | FailRun | Release | Journal | Finish


# -- outcomes


@dataclass(frozen=True)
class Planned:
    successor_agent_id: str
    successor_profile: str
    successor_fsm_state: str
    from_state: str
    plan: bytes
    opening_note: str


@dataclass(frozen=True)
class Reserved:
    successor_agent_id: str


@dataclass(frozen=True)
class HandedOver:
    handover: bytes


@dataclass(frozen=True)
class Completed:
    pass


@dataclass(frozen=True)
class Refused:
    """A forward step was refused: the caller's answer, journaled so a retry gets it again."""

    code: str
    reason: str
    message: str
    metadata: dict[str, str]


@dataclass(frozen=True)
class Lacking:
    """A carried kind the predecessor does not hold (R26): the suite's defect ends the run."""

    message: str
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class Undone:
    """A rollback call was made (applied, or refused because there was nothing left to undo)."""

    what: str


@dataclass(frozen=True)
class Journaled:
    pass


Outcome: TypeAlias = Planned | Reserved | HandedOver | Completed | Refused | Lacking | Undone | Journaled


def asked(
    transfer_id: str, request_id: str, request_hash: str, run_id: str, kind: TransferKind, agent_id: str,
    now_us: int, *, to_state: str = "", successor_profile: str = "", leave_fsm: bool = False,
) -> TransferRecord:
    """A new transfer, as first journaled."""
    return TransferRecord(
        transfer_id=transfer_id, request_id=request_id, request_hash=request_hash, run_id=run_id, kind=kind,
        predecessor_agent_id=agent_id, state=TransferState.PENDING, step=int(Step.ASKED), created_us=now_us,
        to_state=to_state, successor_profile=successor_profile, leave_fsm=leave_fsm,
    )


def decide(saga: Saga) -> Command:
    """The next command for a transfer in this state."""
    r = saga.record
    forward = r.state is not TransferState.FAILED and not r.failure_code
    if not saga.journaled and forward and r.step == Step.HANDED_OVER and r.state is TransferState.PENDING:
        # The handover's outcome is journaled with the completion, in one write: repeated after a crash,
        # the handover answers the same under its request id.
        return completion(r)
    if not saga.journaled:
        return Journal(r, after=r.step if forward else None)
    if r.state is not TransferState.PENDING:
        return Finish(r)
    if r.failure_code:
        return _undo(saga)
    tid = r.transfer_id
    if r.step == Step.ASKED:
        return Plan(
            f"{tid}/plan", r.run_id, r.predecessor_agent_id, r.kind.cause,
            r.to_state if r.kind is TransferKind.TRANSITION else "",
            r.successor_profile if r.kind is TransferKind.EXEC else "", r.leave_fsm,
        )
    if r.step == Step.PLANNED:
        return Reserve(
            f"{tid}/reserve", r.run_id, r.predecessor_agent_id, r.successor_profile, r.kind.cause,
            r.successor_fsm_state,
        )
    if r.step == Step.RESERVED:
        return HandOver(f"{tid}/handover", r.plan, r.successor_agent_id, after=int(Step.HANDED_OVER))
    return completion(r)


def completion(r: TransferRecord) -> Complete:
    """The Complete call of a handed-over transfer (repeated to mint the successor's credential again)."""
    return Complete(f"{r.transfer_id}/complete", r.run_id, r.successor_agent_id, r.handover, r.opening_note)


def evolve(saga: Saga, outcome: Outcome, now_us: int) -> Saga:
    """The state after a command's outcome. `now_us` stamps a transfer that ends."""
    r = saga.record
    if isinstance(outcome, Journaled):
        return replace(saga, journaled=True)
    if isinstance(outcome, Planned):
        return Saga(replace(
            r, step=int(Step.RESERVED), successor_agent_id=outcome.successor_agent_id,
            successor_profile=outcome.successor_profile, successor_fsm_state=outcome.successor_fsm_state,
            from_state=outcome.from_state, plan=outcome.plan, opening_note=outcome.opening_note,
        ), journaled=False)
    if isinstance(outcome, Reserved):
        return Saga(replace(r, step=int(Step.RESERVED), successor_agent_id=outcome.successor_agent_id),
                    journaled=False)
    if isinstance(outcome, HandedOver):
        return Saga(replace(r, step=int(Step.HANDED_OVER), handover=outcome.handover), journaled=False)
    if isinstance(outcome, Completed):
        done = replace(r, state=TransferState.COMPLETED, step=int(Step.COMPLETED), completed_us=now_us)
        return Saga(done, journaled=False)
    if isinstance(outcome, Refused):
        failing = replace(
            r, failure=outcome.message, failure_code=outcome.code, failure_reason=outcome.reason,
            failure_metadata=dict(outcome.metadata),
        )
        return _settle(Saga(failing, journaled=False), now_us)
    if isinstance(outcome, Lacking):
        failing = replace(
            r,
            failure=f"{outcome.message}; run {r.run_id} has ended with status internal_error and nothing "
            "of the transfer was applied",
            failure_code=Code.INTERNAL.value, failure_reason=Reason.RUN_INTERNAL_ERROR.value,
            failure_metadata={"run_id": r.run_id, "agent_id": r.predecessor_agent_id,
                              "kinds": ",".join(k for k in outcome.kinds if k)},
        )
        return Saga(failing, journaled=False)
    return _settle(replace(saga, undone=saga.undone | {outcome.what}), now_us)


def _to_undo(saga: Saga) -> list[str]:
    r = saga.record
    needed = []
    if r.failure_reason == Reason.RUN_INTERNAL_ERROR.value:
        needed.append(FAIL_RUN)
    if r.successor_agent_id and r.step < Step.HANDED_OVER:
        needed.append(RELEASE)
    return [what for what in needed if what not in saga.undone]


def _undo(saga: Saga) -> Command:
    r = saga.record
    what = _to_undo(saga)[0]
    if what == FAIL_RUN:
        return FailRun(f"{r.transfer_id}/fail-run", r.run_id, r.failure)
    return Release(f"{r.transfer_id}/release", r.run_id, r.successor_agent_id)


def _settle(saga: Saga, now_us: int) -> Saga:
    """A refusal with nothing (left) to undo: the transfer has failed."""
    r = saga.record
    if r.state is TransferState.PENDING and r.failure_code and not _to_undo(saga):
        return Saga(replace(r, state=TransferState.FAILED, completed_us=now_us), journaled=False,
                    undone=saga.undone)
    return saga
