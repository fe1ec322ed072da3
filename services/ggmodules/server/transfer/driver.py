"""Runs a transfer's saga (core.transfer.saga): asks it for the next command, runs the command (a call to
Registry or ModuleStore through their stubs, or a journal write), feeds the outcome back, until the transfer
has ended or a step cannot be taken now.

Not reaching a service, or a service refusing a step under contention, leaves the transfer pending at its
last journaled step: the error goes to the caller (UNAVAILABLE or ABORTED) and the resumer (or a retry)
carries on. Only the replica holding a transfer's lease drives it (server.transfer.leases); a call for a
transfer another replica drives waits for its outcome and answers the same. `after_step` is told each crash
point reached (saga `after`): a no-op in production; tests pass a hook that kills the process there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from ggmodules.core.errors import TRANSIENT, DomainError
from ggmodules.core.transfer import saga
from ggmodules.core.transfer.record import TransferRecord
from ggmodules.core.transfer.saga import Saga
from ggmodules.core.vocabulary import TransferState
from ggmodules.internal.v1 import registry_internal_service_pb2 as internal
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.runtime.inline import Runner
from ggmodules.server.transfer.calls import Calls
from ggmodules.server.transfer.leases import WAIT_SECONDS, Holding, LeaseLost, Leases
from ggmodules.server.transfer.locks import Locks
from ggmodules.server.transfer.refusals import outcome_of
from ggmodules.storage.transfer import TransferRepository
from ggmodules.storage.transfer.repository import now_us

# Credentials minted for completed transfers nobody has collected yet (the resumer completes some with no
# caller waiting): the oldest are forgotten past this many.
CREDENTIALS_KEPT = 1024


def no_crash(point: int) -> None:
    """Production's crash hook: nothing."""


class Driver:
    def __init__(
        self,
        repo: TransferRepository,
        calls: Calls,
        leases: Leases,
        log: structlog.typing.FilteringBoundLogger,
        run: Runner = asyncio.to_thread,
        after_step: Callable[[int], None] = no_crash,
    ) -> None:
        self._repo = repo
        self._calls = calls
        self._leases = leases
        self._log = log
        self._run = run
        self._after_step = after_step
        self._locks = Locks()
        # Successor credentials Registry minted at CompleteSuccessor, until the answer carries them.
        self.credentials: dict[str, str] = {}

    def reached(self, point: int | None) -> None:
        if point is not None:
            self._after_step(point)

    async def drive(
        self, transfer_id: str, *, wait: bool = True, fresh: TransferRecord | None = None
    ) -> TransferRecord | None:
        """Takes the transfer as far as it goes: completed, failed, or (raising) stuck at its step. While
        another replica holds its lease: waits for that one's outcome, or (`wait` False) returns None.
        `fresh`: the transfer as this replica has just journaled it, its lease taken with it."""
        async with self._locks.hold(transfer_id, wait=wait) as mine:
            while mine:
                if fresh is not None:
                    held, record = True, fresh
                    fresh = None
                else:
                    held = await self._leases.take(transfer_id)
                    record = await self._run(self._repo.transact, lambda unit: unit.get(transfer_id))
                if record.state is not TransferState.PENDING:
                    return record
                if held:
                    try:
                        async with self._leases.held(transfer_id) as holding:
                            return await self._steps(Saga(record), holding)
                    except LeaseLost:
                        self._log.warning("transfer taken over by another replica", transfer_id=transfer_id)
                if not wait:
                    return None
                await asyncio.sleep(WAIT_SECONDS)  # another replica drives it: look again
            return None

    async def _steps(self, state: Saga, holding: Holding) -> TransferRecord:
        while True:
            if holding.lost:
                raise LeaseLost(state.record.transfer_id)
            command = saga.decide(state)
            if isinstance(command, saga.Finish):
                holding.ended = True
                return command.record
            try:
                outcome = await self._execute(command, state.record.transfer_id)
            except LeaseLost:
                raise
            except Exception:
                if not state.journaled:  # how far it got, before leaving it pending
                    await self._journal(state.record)
                raise
            self.reached(command.after)
            state = saga.evolve(state, outcome, now_us())

    async def _execute(self, command: saga.Command, transfer_id: str) -> saga.Outcome:
        if isinstance(command, saga.Journal):
            return await self._journal(command.record)
        if isinstance(command, (saga.FailRun, saga.Release)):
            return await self._undo(command)
        if isinstance(command, saga.Complete):
            completed = await self._calls.complete(complete_request(command))
            self._keep_credential(transfer_id, completed.credential)
            return saga.Completed()
        try:
            return await self._forward(command)
        except TRANSIENT:  # left pending at its step: resumed later, or by a retry
            raise
        except DomainError as err:
            return outcome_of(err)

    async def _forward(self, command: saga.Command) -> saga.Outcome:
        if isinstance(command, saga.Plan):
            planned = await self._calls.plan(internal.PlanSuccessorRequest(
                request_id=command.request_id, run_id=command.run_id,
                predecessor_agent_id=command.predecessor_agent_id, cause=command.cause,
                to_state=command.to_state, profile=command.profile, leave_fsm=command.leave_fsm,
            ))
            handover = planned.handover
            handover.successor_agent_id = ""  # journaled as planned: the driver names the successor
            return saga.Planned(
                planned.successor_agent_id, planned.successor_profile, planned.successor_fsm_state,
                planned.from_state, handover.SerializeToString(deterministic=True), handover.opening_note,
            )
        if isinstance(command, saga.Reserve):
            reserved = await self._calls.reserve(reg.ReserveSuccessorRequest(
                request_id=command.request_id, run_id=command.run_id,
                predecessor_agent_id=command.predecessor_agent_id, profile=command.profile,
                cause=command.cause, fsm_state=command.fsm_state,
            ))
            return saga.Reserved(reserved.agent_id)
        assert isinstance(command, saga.HandOver), command
        request = ms.HandoverRequest.FromString(command.plan)
        request.request_id = command.request_id
        request.successor_agent_id = command.successor_agent_id
        handed = await self._calls.handover(request)
        return saga.HandedOver(handed.SerializeToString(deterministic=True))

    async def _undo(self, command: saga.FailRun | saga.Release) -> saga.Outcome:
        """A rollback call: not reaching Registry leaves the transfer pending; a refusal is only logged
        (the run may have ended meanwhile, and then there is nothing left to undo)."""
        try:
            if isinstance(command, saga.FailRun):
                await self._calls.fail_run(reg.FailRunRequest(
                    request_id=command.request_id, run_id=command.run_id, detail=command.detail
                ))
                return saga.Undone(saga.FAIL_RUN)
            await self._calls.release(reg.ReleaseSuccessorRequest(
                request_id=command.request_id, run_id=command.run_id, agent_id=command.agent_id
            ))
        except TRANSIENT:  # left pending at its step: resumed later, or by a retry
            raise
        except DomainError as err:
            self._log.warning("rollback call refused", method=type(command).__name__,
                              request_id=command.request_id, reason=err.reason.value, message=err.message)
        return saga.Undone(saga.FAIL_RUN if isinstance(command, saga.FailRun) else saga.RELEASE)

    async def _journal(self, record: TransferRecord) -> saga.Outcome:
        owner = self._leases.owner
        saved = await self._run(self._repo.transact, lambda unit: unit.save(record, owner))
        if not saved:  # another replica holds the lease now: it drives the transfer from here
            raise LeaseLost(record.transfer_id)
        return saga.Journaled()

    def _keep_credential(self, transfer_id: str, credential: str) -> None:
        self.credentials[transfer_id] = credential
        while len(self.credentials) > CREDENTIALS_KEPT:  # completed with no caller waiting for them
            self.credentials.pop(next(iter(self.credentials)))


def complete_request(command: saga.Complete) -> reg.CompleteSuccessorRequest:
    handed = ms.HandoverResponse.FromString(command.handover)
    return reg.CompleteSuccessorRequest(
        request_id=command.request_id, run_id=command.run_id, agent_id=command.agent_id, roster=handed.roster,
        opening_note=command.opening_note,
    )
