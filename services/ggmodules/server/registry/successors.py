"""Transfer successors (called by Transfer): reserve an agent id, complete it with the handed-over roster,
or release it when the transfer rolls back. Each call is one Registry transaction, idempotent by request id.

A reservation is an invisible instance row (cause "transition" or "exec") naming its predecessor; the
unique (run, predecessor) key keeps a predecessor to one successor even when two reservations race.
Completing does not require a running run: once ModuleStore has applied the handover, Transfer rolls forward.
"""

from __future__ import annotations

from ggmodules.core.errors import InvalidArgument, NotFound, Reason, missing
from ggmodules.core.modules.limits import check_text
from ggmodules.core.registry.identity import Caller
from ggmodules.core.registry.runs import agent_id_for, require_running
from ggmodules.core.registry.successors import check_cause, check_successor, handed_on, not_reserved
from ggmodules.core.roster import RosterRow
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.server.registry.requests import request_key
from ggmodules.storage.registry import InstanceRecord, RegistryRepository, RegistryUnit
from ggmodules.storage.registry.repository import now_us
from ggmodules.wire.registry import instance_to_proto, roster_from_proto


class Successors:
    def __init__(self, repo: RegistryRepository) -> None:
        self._repo = repo

    @property
    def repo(self) -> RegistryRepository:
        return self._repo

    def reserve(self, request: pb.ReserveSuccessorRequest, caller: Caller) -> pb.ReserveSuccessorResponse:
        for value, field in (
            (request.run_id, "run_id"),
            (request.predecessor_agent_id, "predecessor_agent_id"),
            (request.profile, "profile"),
        ):
            _require(value, field)
        cause = check_cause(request.cause)
        caller.check_run(request.run_id)
        key = request_key("ReserveSuccessor", request)

        def work(unit: RegistryUnit) -> pb.ReserveSuccessorResponse:
            if (answer := unit.claim(key)) is not None:
                return pb.ReserveSuccessorResponse.FromString(answer)
            run = unit.run(request.run_id, share=True)
            require_running(run.run_id, run.status, "a transfer needs a running run")
            predecessor = unit.instance(run.run_id, request.predecessor_agent_id)
            check_successor(run.spec, run.run_id, request.profile, request.fsm_state)
            existing = unit.successor_of(run.run_id, predecessor.agent_id)
            if existing is not None:
                raise handed_on(run.run_id, predecessor.agent_id, existing.agent_id, not existing.pending)
            agent_id = agent_id_for(request.profile, unit.next_agent_number(run.run_id, request.profile))
            unit.add_reservation(
                InstanceRecord(
                    run_id=run.run_id, agent_id=agent_id, profile=request.profile,
                    parent_agent_id=predecessor.agent_id, cause=cause, fsm_state=request.fsm_state,
                    roster=(), created_us=now_us(), pending=True, reserved_for=predecessor.agent_id,
                ),
                key,
            )
            response = pb.ReserveSuccessorResponse(agent_id=agent_id)
            unit.answer(key, response.SerializeToString())
            return response

        return self._repo.transact(work)

    def complete(self, request: pb.CompleteSuccessorRequest, caller: Caller) -> pb.CompleteSuccessorResponse:
        _require(request.run_id, "run_id")
        _require(request.agent_id, "agent_id")
        check_text("opening_note", request.opening_note)
        roster = _roster(request)
        caller.check_run(request.run_id)
        key = request_key("CompleteSuccessor", request)

        def work(unit: RegistryUnit) -> pb.CompleteSuccessorResponse:
            if (answer := unit.claim(key)) is not None:
                return pb.CompleteSuccessorResponse.FromString(answer)
            run = unit.run(request.run_id)
            successor = _reservation(unit, run.run_id, request.agent_id)
            if successor.released:
                raise not_reserved(
                    run.run_id, successor.agent_id,
                    "was released: its transfer was rolled back. Reserve a new successor",
                )
            if not successor.pending:
                raise not_reserved(
                    run.run_id, successor.agent_id,
                    "is already complete; a successor is completed once and its roster never changes",
                )
            completed = unit.complete_successor(successor, roster, request.opening_note)
            response = pb.CompleteSuccessorResponse(instance=instance_to_proto(completed))
            unit.answer(key, response.SerializeToString())
            return response

        return self._repo.transact(work)

    def release(self, request: pb.ReleaseSuccessorRequest, caller: Caller) -> pb.ReleaseSuccessorResponse:
        _require(request.run_id, "run_id")
        _require(request.agent_id, "agent_id")
        caller.check_run(request.run_id)
        key = request_key("ReleaseSuccessor", request)

        def work(unit: RegistryUnit) -> pb.ReleaseSuccessorResponse:
            if (answer := unit.claim(key)) is not None:
                return pb.ReleaseSuccessorResponse.FromString(answer)
            run = unit.run(request.run_id)
            successor = unit.find_instance(run.run_id, request.agent_id, lock=True)
            # Unknown or already released: nothing is reserved, which is what a release asks for.
            if successor is not None and not successor.released:
                if not successor.is_successor:
                    raise not_reserved(
                        run.run_id, successor.agent_id,
                        f"was opened by {successor.cause}, not reserved as a transfer successor; "
                        "only reservations are released",
                    )
                if not successor.pending:
                    raise handed_on(run.run_id, successor.reserved_for, successor.agent_id, completed=True)
                unit.release(run.run_id, successor.agent_id)
            response = pb.ReleaseSuccessorResponse()
            unit.answer(key, response.SerializeToString())
            return response

        return self._repo.transact(work)


def _reservation(unit: RegistryUnit, run_id: str, agent_id: str) -> InstanceRecord:
    found = unit.find_instance(run_id, agent_id, lock=True)
    if found is None:
        raise NotFound(
            f"agent {agent_id!r} was never reserved in run {run_id}; reserve it with ReserveSuccessor",
            reason=Reason.AGENT_NOT_FOUND,
            metadata={"run_id": run_id, "agent_id": agent_id},
        )
    if not found.is_successor:
        raise not_reserved(
            run_id, agent_id,
            f"was opened by {found.cause}, not reserved as a transfer successor; only reservations complete",
        )
    return found


def _roster(request: pb.CompleteSuccessorRequest) -> tuple[RosterRow, ...]:
    """The roster ModuleStore bound, as sent: known kinds and values, one row per kind."""
    try:
        rows = roster_from_proto(request.roster)
    except ValueError as err:
        raise InvalidArgument(
            f"roster: {err}; send the roster ModuleStore's Handover answered",
            metadata={"field": "roster"}, violations=[("roster", str(err))],
        ) from None
    kinds = [r.kind for r in rows]
    twice = sorted({k.word for k in kinds if kinds.count(k) > 1})
    if twice:
        raise InvalidArgument(
            f"roster: {', '.join(twice)} listed more than once; a roster has one row per kind",
            metadata={"field": "roster"}, violations=[("roster", "one row per kind")],
        )
    return tuple(sorted(rows, key=lambda r: r.kind))


def _require(value: str, field: str) -> None:
    if not value:
        raise missing(field)
