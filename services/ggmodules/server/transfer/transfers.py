"""Transfers, journaled in Transfer's own database and driven in idempotent steps across the services.

0. asked: the journal row is written (a retry with the same request id finds it: its stored answer, or
   it is resumed).
1. planned: Registry's run and predecessor are read and checked (an exec inside an FSM state: the successor
   can take every edge out of it, see checks.require_edges_takeable), the per-kind plan is made (R19-R24,
   R35).
2. reserved: Registry mints the successor's agent id, invisible for now.
3. handed over: ModuleStore applies the whole plan and appends its events in one transaction.
4. completed: Registry makes the successor visible and records it on the predecessor.
Every call carries a request id derived from the transfer, so repeating a step applies it once. A refusal
before step 3 rolls back (the reservation is released) and is the answer. From step 3 on the transfer only
rolls forward. Not reaching a service, or a service refusing a step under contention, leaves the transfer
pending at its step: the caller gets UNAVAILABLE or ABORTED and the resumer (or a retry) carries on. A
carried kind the predecessor does not hold (R26) fails the run with internal_error and rolls back.

Only the replica holding a transfer's lease drives it (server.transfer.leases): a call for a transfer
another replica drives waits for its outcome and answers the same, and a dead replica's transfers are taken
over by the others' scans once its leases expire.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TypeAlias

import structlog

from ggmodules.core.errors import (
    TRANSIENT,
    AlreadyExists,
    Code,
    Contention,
    DomainError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Reason,
    ResourceExhausted,
    SuiteDefect,
    Unavailable,
    missing,
)
from ggmodules.core.registry.runs import require_running
from ggmodules.core.transfer.checks import require_edges_takeable, require_not_handed_on, resolve_edge
from ggmodules.core.transfer.plan import PredecessorLacks, Sides, plan_exec, plan_transition
from ggmodules.core.vocabulary import TransferKind, TransferState
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.server.transfer.calls import Calls
from ggmodules.server.transfer.crash import CrashSwitch
from ggmodules.server.transfer.leases import WAIT_SECONDS, Holding, LeaseLost, Leases
from ggmodules.storage.idempotency import fingerprint
from ggmodules.storage.transfer import TransferRecord, TransferRepository, TransferUnit
from ggmodules.storage.transfer.repository import now_us
from ggmodules.transfer.v1 import transfer_pb2
from ggmodules.transfer.v1 import transfer_service_pb2 as pb
from ggmodules.wire.registry import roster_from_proto
from ggmodules.wire.transfer import handover_request, run_spec, transfer_to_proto

ASKED, PLANNED, RESERVED, HANDED_OVER, COMPLETED = range(5)
Ask: TypeAlias = pb.TransitionRequest | pb.ExecRequest
_REFUSALS: dict[Code, type[DomainError]] = {
    c.code: c
    for c in (
        InvalidArgument, NotFound, AlreadyExists, FailedPrecondition, ResourceExhausted, PermissionDenied,
        Unavailable, Contention, SuiteDefect,
    )
}


class Transfers:
    def __init__(
        self,
        repo: TransferRepository,
        calls: Calls,
        crash: CrashSwitch,
        log: structlog.typing.FilteringBoundLogger,
        leases: Leases,
    ) -> None:
        self._repo = repo
        self._calls = calls
        self._crash = crash
        self._log = log
        self._leases = leases
        # One driver per transfer inside this process (all of its calls share one lease owner).
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        # Told when a transfer is left pending (the resumer's poke).
        self.on_pending: Callable[[], None] = lambda: None
        # Successor credentials Registry minted at CompleteSuccessor, until the answer carries them.
        self._credentials: dict[str, str] = {}

    # -- the RPCs

    async def transition(self, request: pb.TransitionRequest) -> pb.TransitionResponse:
        for value, name in ((request.run_id, "run_id"), (request.agent_id, "agent_id"),
                            (request.to_state, "to_state")):
            _require(value, name)
        record = await self._ask("Transition", request, TransferKind.TRANSITION, to_state=request.to_state)
        transfer = await self._answer(record)
        return pb.TransitionResponse(transfer=transfer, successor_credential=await self._credential(transfer))

    async def exec(self, request: pb.ExecRequest) -> pb.ExecResponse:
        for value, name in ((request.run_id, "run_id"), (request.agent_id, "agent_id"),
                            (request.profile, "profile")):
            _require(value, name)
        record = await self._ask(
            "Exec", request, TransferKind.EXEC, successor_profile=request.profile, leave_fsm=request.leave_fsm
        )
        transfer = await self._answer(record)
        return pb.ExecResponse(transfer=transfer, successor_credential=await self._credential(transfer))

    def get(self, request: pb.GetTransferRequest) -> pb.GetTransferResponse:
        _require(request.run_id, "run_id")
        if not (request.transfer_id or request.request_id):
            raise InvalidArgument(
                "name the transfer by transfer_id or by the request_id it was asked with",
                metadata={"field": "transfer_id"}, violations=[("transfer_id", "transfer_id or request_id")],
            )
        record = self._repo.transact(
            lambda unit: unit.find(
                request.run_id, transfer_id=request.transfer_id, request_id=request.request_id
            )
        )
        return pb.GetTransferResponse(transfer=transfer_to_proto(record))

    # -- driving one transfer

    async def pending(self) -> list[str]:
        """Pending transfers no replica holds a live lease on: the resumer's to take over."""
        return await asyncio.to_thread(self._repo.transact, lambda unit: unit.pending_ids())

    async def drive(self, transfer_id: str, *, wait: bool = True) -> TransferRecord | None:
        """Takes the transfer as far as it goes: completed, failed, or (raising) stuck at its step. While
        another replica holds its lease: waits for that one's outcome, or (`wait` False) returns None."""
        async with self._lock(transfer_id, wait=wait) as mine:
            while mine:
                held = await self._leases.take(transfer_id)
                record: TransferRecord = await asyncio.to_thread(
                    self._repo.transact, lambda unit: unit.get(transfer_id)
                )
                if record.state is not TransferState.PENDING:
                    return record
                if held:
                    try:
                        async with self._leases.held(transfer_id) as holding:
                            while record.state is TransferState.PENDING:
                                record = await self._step(record, holding)
                        return record
                    except LeaseLost:
                        self._log.warning("transfer taken over by another replica", transfer_id=transfer_id)
                if not wait:
                    return None
                await asyncio.sleep(WAIT_SECONDS)  # another replica drives it: look again
            return None

    async def _ask(
        self, method: str, request: Ask, kind: TransferKind, *, to_state: str = "",
        successor_profile: str = "", leave_fsm: bool = False,
    ) -> TransferRecord:
        request_hash = fingerprint(method.encode() + b"\n" + request.SerializeToString(deterministic=True))

        def begin(unit: TransferUnit) -> tuple[TransferRecord, bool]:
            if request.request_id and (found := unit.by_request(request.request_id, request_hash)):
                return found, False
            record = TransferRecord(
                transfer_id=f"transfer-{secrets.token_hex(8)}", request_id=request.request_id,
                request_hash=request_hash, run_id=request.run_id, kind=kind,
                predecessor_agent_id=request.agent_id, state=TransferState.PENDING, step=ASKED,
                created_us=now_us(), to_state=to_state, successor_profile=successor_profile,
                leave_fsm=leave_fsm,
            )
            unit.add(record, self._leases.owner, self._leases.terms.seconds)
            return record, True

        record, journaled = await asyncio.to_thread(self._repo.transact, begin)
        if journaled:
            self._crash.after(ASKED)
        return record

    async def _answer(self, record: TransferRecord) -> transfer_pb2.Transfer:
        # A caller that goes away does not stop the transfer half-way through a step.
        driving = asyncio.ensure_future(self.drive(record.transfer_id))
        driving.add_done_callback(lambda task: task.cancelled() or task.exception())
        try:
            done = await asyncio.shield(driving)
        except BaseException:
            self.on_pending()  # left at its step (or still going): the resumer carries on
            raise
        assert done is not None  # a waiting drive returns only once the transfer has ended
        if done.state is TransferState.FAILED:
            raise _refusal(done)
        return transfer_to_proto(done)

    async def _credential(self, transfer: transfer_pb2.Transfer) -> str:
        """The successor's credential for the caller of a completed transfer: the one Registry minted when
        the transfer completed, or (an answer repeated after a restart) a fresh one from repeating the
        CompleteSuccessor call, which Registry applies once and answers again with a new credential."""
        cached = self._credentials.pop(transfer.transfer_id, None)
        if cached is not None:
            return cached
        record: TransferRecord = await asyncio.to_thread(
            self._repo.transact, lambda unit: unit.get(transfer.transfer_id)
        )
        if record.state is not TransferState.COMPLETED:
            return ""
        return (await self._calls.complete(self._complete_request(record))).credential

    def _complete_request(self, record: TransferRecord) -> reg.CompleteSuccessorRequest:
        handed = ms.HandoverResponse.FromString(record.handover)
        return reg.CompleteSuccessorRequest(
            request_id=f"{record.transfer_id}/complete", run_id=record.run_id,
            agent_id=record.successor_agent_id, roster=handed.roster, opening_note=record.opening_note,
        )

    async def _step(self, record: TransferRecord, holding: Holding) -> TransferRecord:
        if holding.lost:
            raise LeaseLost(record.transfer_id)
        if record.failure_code:
            return await self._roll_back(record)
        if record.step == ASKED:
            return await self._plan(record)
        if record.step == PLANNED:
            return await self._reserve(record)
        if record.step == RESERVED:
            return await self._hand_over(record)
        return await self._complete(record)

    async def _plan(self, record: TransferRecord) -> TransferRecord:
        """Step 1: read and check the run and the predecessor, then plan per kind."""
        run_id, agent_id = record.run_id, record.predecessor_agent_id
        try:
            run = (await self._calls.get_run(run_id)).run
            predecessor = (await self._calls.get_instance(run_id, agent_id)).instance
            spec, status = run_spec(run)
            require_running(run_id, status, "a transfer needs a running run")
            require_not_handed_on(run_id, agent_id, predecessor.successor_agent_id)
            edge = None
            successor = record.successor_profile
            if record.kind is TransferKind.TRANSITION:
                edge, successor = resolve_edge(
                    run_id, spec.fsm, agent_id, predecessor.fsm_state, record.to_state
                )
            successor_profile = spec.profile(successor, run_id)
            # An exec successor keeps the agent's state, unless it leaves the FSM.
            fsm_state = edge.target if edge else "" if record.leave_fsm else predecessor.fsm_state
            if edge is None and fsm_state:
                require_edges_takeable(
                    run_id, spec.fsm, agent_id, fsm_state, successor_profile, spec.board_enabled
                )
            sides = Sides(
                predecessor_agent_id=agent_id,
                predecessor_profile=spec.profile(predecessor.profile, run_id),
                roster=roster_from_proto(predecessor.roster),
                successor=successor_profile,
                board_enabled=spec.board_enabled,
            )
            plan = plan_exec(sides) if edge is None else plan_transition(sides, edge)
            from_state = edge.source if edge else ""
        except TRANSIENT:  # left pending at its step: resumed later, or by a retry
            raise
        except PredecessorLacks as lack:
            return await self._defect(record, str(lack), [k.word for k in lack.kinds])
        except DomainError as err:
            return await self._refuse(record, err)
        planned = handover_request(run_id, plan).SerializeToString(deterministic=True)
        return await self._save(replace(
            record, step=PLANNED, plan=planned, opening_note=plan.opening_note, from_state=from_state,
            successor_profile=plan.profile, successor_fsm_state=fsm_state,
        ))

    async def _reserve(self, record: TransferRecord) -> TransferRecord:
        """Step 2: the successor's agent id, minted by Registry and invisible until step 4 (R36)."""
        request = reg.ReserveSuccessorRequest(
            request_id=f"{record.transfer_id}/reserve", run_id=record.run_id,
            predecessor_agent_id=record.predecessor_agent_id, profile=record.successor_profile,
            cause=record.kind.cause, fsm_state=record.successor_fsm_state,
        )
        try:
            reserved = await self._calls.reserve(request)
        except TRANSIENT:  # left pending at its step: resumed later, or by a retry
            raise
        except DomainError as err:
            return await self._refuse(record, err)
        return await self._save(replace(record, step=RESERVED, successor_agent_id=reserved.agent_id))

    async def _hand_over(self, record: TransferRecord) -> TransferRecord:
        """Step 3: ModuleStore applies the plan and appends its events in one transaction."""
        request = ms.HandoverRequest.FromString(record.plan)
        request.request_id = f"{record.transfer_id}/handover"
        request.successor_agent_id = record.successor_agent_id
        try:
            handed = await self._calls.handover(request)
        except TRANSIENT:  # left pending at its step: resumed later, or by a retry
            raise
        except DomainError as err:
            if err.reason is Reason.KIND_NOT_HELD:
                return await self._defect(record, err.message, [err.metadata.get("kind", "")])
            return await self._refuse(record, err)
        return await self._save(
            replace(record, step=HANDED_OVER, handover=handed.SerializeToString(deterministic=True))
        )

    async def _complete(self, record: TransferRecord) -> TransferRecord:
        """Step 4: the successor becomes visible. The handover is applied: from here on, forward only."""
        completed = await self._calls.complete(self._complete_request(record))
        self._credentials[record.transfer_id] = completed.credential
        while len(self._credentials) > 1024:  # completed by the resumer with no caller waiting for them
            self._credentials.pop(next(iter(self._credentials)))
        return await self._save(
            replace(record, state=TransferState.COMPLETED, step=COMPLETED, completed_us=now_us())
        )

    # -- refusals and rollback

    async def _refuse(self, record: TransferRecord, err: DomainError) -> TransferRecord:
        """Journals the refusal (so a retry gets the same one), then rolls back."""
        failing = replace(
            record, failure=err.message, failure_code=err.code.value, failure_reason=err.reason.value,
            failure_metadata=dict(err.metadata),
        )
        return await self._roll_back(await self._save(failing, crash=False))

    async def _defect(self, record: TransferRecord, what: str, kinds: list[str]) -> TransferRecord:
        """R26: the suite's own defect ends the run under internal_error; nothing is applied."""
        self._log.error("transfer met a kind its predecessor does not hold", transfer_id=record.transfer_id,
                        run_id=record.run_id, detail=what)
        failing = replace(
            record,
            failure=f"{what}; run {record.run_id} has ended with status internal_error and nothing of the "
            "transfer was applied",
            failure_code=Code.INTERNAL.value, failure_reason=Reason.RUN_INTERNAL_ERROR.value,
            failure_metadata={"run_id": record.run_id, "agent_id": record.predecessor_agent_id,
                              "kinds": ",".join(k for k in kinds if k)},
        )
        return await self._roll_back(await self._save(failing, crash=False))

    async def _roll_back(self, record: TransferRecord) -> TransferRecord:
        if record.failure_reason == Reason.RUN_INTERNAL_ERROR.value:
            fail = reg.FailRunRequest(
                request_id=f"{record.transfer_id}/fail-run", run_id=record.run_id, detail=record.failure
            )
            await self._tolerate(self._calls.fail_run(fail), "FailRun", record)
        if record.successor_agent_id and record.step < HANDED_OVER:
            release = reg.ReleaseSuccessorRequest(
                request_id=f"{record.transfer_id}/release", run_id=record.run_id,
                agent_id=record.successor_agent_id,
            )
            await self._tolerate(self._calls.release(release), "ReleaseSuccessor", record)
        failed = replace(record, state=TransferState.FAILED, completed_us=now_us())
        return await self._save(failed, crash=False)

    async def _tolerate(self, call: Awaitable[None], method: str, record: TransferRecord) -> None:
        """A rollback call: not reaching Registry leaves the transfer pending; a refusal is only logged
        (the run may have ended meanwhile, and then there is nothing left to undo)."""
        try:
            await call
        except TRANSIENT:  # left pending at its step: resumed later, or by a retry
            raise
        except DomainError as err:
            self._log.warning("rollback call refused", method=method, transfer_id=record.transfer_id,
                              reason=err.reason.value, message=err.message)

    # -- journal

    async def _save(self, record: TransferRecord, *, crash: bool = True) -> TransferRecord:
        owner = self._leases.owner
        saved = await asyncio.to_thread(self._repo.transact, lambda unit: unit.save(record, owner))
        if not saved:  # another replica holds the lease now: it drives the transfer from here
            raise LeaseLost(record.transfer_id)
        if crash:
            self._crash.after(record.step)
        return record

    @asynccontextmanager
    async def _lock(self, transfer_id: str, *, wait: bool = True) -> AsyncIterator[bool]:
        """This process's one driver of the transfer; yields False (without waiting) when `wait` is False
        and another call of this process drives it."""
        lock, users = self._locks.get(transfer_id, (asyncio.Lock(), 0))
        if not wait and lock.locked():
            yield False
            return
        self._locks[transfer_id] = (lock, users + 1)
        try:
            async with lock:
                yield True
        finally:
            lock, users = self._locks[transfer_id]
            if users == 1:
                del self._locks[transfer_id]
            else:
                self._locks[transfer_id] = (lock, users - 1)


def _refusal(record: TransferRecord) -> DomainError:
    """The refusal a failed transfer answered with, again."""
    code = Code(record.failure_code)
    refusal = _REFUSALS.get(code, FailedPrecondition)(
        record.failure, reason=Reason(record.failure_reason), metadata=record.failure_metadata
    )
    refusal.code = code
    return refusal


def _require(value: str, field: str) -> None:
    if not value:
        raise missing(field)
