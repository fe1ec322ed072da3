"""Transfers, the RPCs: a Transition or Exec is journaled in Transfer's own database (a retry with the same
request id finds it: its stored answer, or it is resumed), then driven to its end by the saga's driver
(server.transfer.driver, core.transfer.saga):

0. asked: the journal row is written, this replica's lease on it taken with it.
1-2. planned and reserved: Registry reads and checks the run and the predecessor, plans per kind (R19-R24,
   R35) and mints the successor's agent id, invisible for now, in one call (PlanSuccessor).
3. handed over: ModuleStore applies the whole plan and appends its events in one transaction.
4. completed: Registry makes the successor visible and records it on the predecessor.
Every call carries a request id derived from the transfer, so repeating a step applies it once. A refusal
before step 3 rolls back (the reservation is released) and is the answer. From step 3 on the transfer only
rolls forward. A carried kind the predecessor does not hold (R26) fails the run with internal_error and
rolls back.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import TypeAlias

from ggmodules.core.errors import InvalidArgument, Unavailable, missing
from ggmodules.core.transfer import saga
from ggmodules.core.transfer.record import Step, TransferRecord
from ggmodules.core.vocabulary import TransferKind, TransferState
from ggmodules.runtime.dependency import caller_cancelled
from ggmodules.runtime.inline import Runner
from ggmodules.server.transfer.calls import Calls
from ggmodules.server.transfer.driver import Driver, complete_request
from ggmodules.server.transfer.leases import Leases
from ggmodules.server.transfer.refusals import refusal
from ggmodules.storage.idempotency import fingerprint
from ggmodules.storage.transfer import TransferRepository, TransferUnit
from ggmodules.storage.transfer.repository import now_us
from ggmodules.transfer.v1 import transfer_pb2
from ggmodules.transfer.v1 import transfer_service_pb2 as pb
from ggmodules.wire.transfer import transfer_to_proto

Ask: TypeAlias = pb.TransitionRequest | pb.ExecRequest


class Transfers:
    def __init__(
        self, repo: TransferRepository, calls: Calls, leases: Leases, driver: Driver,
        run: Runner = asyncio.to_thread,
    ) -> None:
        self._repo = repo
        self._calls = calls
        self._leases = leases
        self._driver = driver
        self._run = run
        # Told when a transfer is left pending (the resumer's poke).
        self.on_pending: Callable[[], None] = lambda: None

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

    async def pending(self) -> list[str]:
        """Pending transfers no replica holds a live lease on: the resumer's to take over."""
        return await self._run(self._repo.transact, lambda unit: unit.pending_ids())

    async def resume(self, transfer_id: str) -> TransferRecord | None:
        """The resumer's drive: leaves a transfer another call of this process drives to that call."""
        return await self._driver.drive(transfer_id, wait=False)

    async def _ask(
        self, method: str, request: Ask, kind: TransferKind, *, to_state: str = "",
        successor_profile: str = "", leave_fsm: bool = False,
    ) -> tuple[TransferRecord, bool]:
        """The journaled transfer, and whether this call journaled it (its lease taken with it)."""
        request_hash = fingerprint(method.encode() + b"\n" + request.SerializeToString(deterministic=True))

        def begin(unit: TransferUnit) -> tuple[TransferRecord, bool]:
            if request.request_id and (found := unit.by_request(request.request_id, request_hash)):
                return found, False
            record = saga.asked(
                f"transfer-{secrets.token_hex(8)}", request.request_id, request_hash, request.run_id, kind,
                request.agent_id, now_us(), to_state=to_state, successor_profile=successor_profile,
                leave_fsm=leave_fsm,
            )
            unit.add(record, self._leases.owner, self._leases.terms.seconds)
            return record, True

        found: tuple[TransferRecord, bool] = await self._run(self._repo.transact, begin)
        if found[1]:
            self._driver.reached(int(Step.ASKED))
        return found

    async def _answer(self, asked: tuple[TransferRecord, bool]) -> transfer_pb2.Transfer:
        record, journaled = asked
        # A caller that goes away does not stop the transfer half-way through a step.
        driving = asyncio.ensure_future(
            self._driver.drive(record.transfer_id, fresh=record if journaled else None)
        )
        driving.add_done_callback(lambda task: task.cancelled() or task.exception())
        try:
            done = await asyncio.shield(driving)
        except BaseException as exc:
            self.on_pending()  # left at its step (or still going): the resumer carries on
            if isinstance(exc, asyncio.CancelledError) and not caller_cancelled():
                # The drive was cancelled, not this call: answered, or the client waits out its deadline.
                raise Unavailable(
                    f"transfer {record.transfer_id} was interrupted at its step; it is journaled and "
                    "resumes. Retry with the same request_id for the final answer",
                    metadata={"transfer_id": record.transfer_id},
                ) from None
            raise
        assert done is not None  # a waiting drive returns only once the transfer has ended
        if done.state is TransferState.FAILED:
            raise refusal(done)
        return transfer_to_proto(done)

    async def _credential(self, transfer: transfer_pb2.Transfer) -> str:
        """The successor's credential for the caller of a completed transfer: the one Registry minted when
        the transfer completed, or (an answer repeated after a restart) a fresh one from repeating the
        CompleteSuccessor call, which Registry applies once and answers again with a new credential."""
        cached = self._driver.credentials.pop(transfer.transfer_id, None)
        if cached is not None:
            return cached
        if transfer.state != transfer_pb2.TRANSFER_STATE_COMPLETED:
            return ""
        record: TransferRecord = await self._run(
            self._repo.transact, lambda unit: unit.get(transfer.transfer_id)
        )
        return (await self._calls.complete(complete_request(saga.completion(record)))).credential


def _require(value: str, field: str) -> None:
    if not value:
        raise missing(field)
