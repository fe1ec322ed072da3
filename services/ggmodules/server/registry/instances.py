"""Opening instances (open a root, spawn a subagent, fork a copy) and reading them back.

Opening spans two services, so it goes in three steps, each safe to repeat:
1. In Registry's database: mint the agent id, plan the bindings and record a *pending* instance under the
   request id, together with the exact BindInstanceRequest to send (its request id derived from the agent).
2. ModuleStore.BindInstance with that request. A retry re-sends the same bytes, so ModuleStore applies it
   once and answers the same roster.
3. In Registry's database: record the roster, make the instance visible and record the answer.
A retry with the same request id, also after a crash between the steps, resumes the pending instance. If
ModuleStore cannot be reached the call is UNAVAILABLE and the pending instance stays invisible; if
ModuleStore refuses, the refusal is the answer and the pending instance is dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from google.protobuf.message import Message

from ggmodules.core.errors import TRANSIENT, DomainError, FailedPrecondition, Reason, missing
from ggmodules.core.registry.identity import Caller
from ggmodules.core.registry.paging import decode_token, encode_token, page_size
from ggmodules.core.registry.plans import plan_fork, plan_open, plan_spawn
from ggmodules.core.registry.runs import agent_id_for, require_running, resolve_open
from ggmodules.core.roster import BindPlan, RosterRow
from ggmodules.modulestore.v1 import modulestore_service_pb2
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.server.registry.binder import ModuleStoreBinder
from ggmodules.server.registry.requests import request_key
from ggmodules.storage.registry import InstanceRecord, RegistryRepository, RegistryUnit, RequestKey, RunRecord
from ggmodules.storage.registry.repository import now_us
from ggmodules.wire.registry import bind_request, instance_to_proto, roster_from_proto

Opened = TypeVar("Opened", pb.OpenInstanceResponse, pb.SpawnSubagentResponse, pb.ForkInstanceResponse)
Mint = Callable[[RegistryUnit], InstanceRecord]


class Instances:
    def __init__(self, repo: RegistryRepository, binder: ModuleStoreBinder) -> None:
        self._repo = repo
        self._binder = binder

    async def open(self, request: pb.OpenInstanceRequest, caller: Caller) -> pb.OpenInstanceResponse:
        _require(request.run_id, "run_id")
        caller.check_run(request.run_id)

        def mint(unit: RegistryUnit) -> InstanceRecord:
            run = _running(unit, request.run_id)
            profile, state = resolve_open(run.spec, run.run_id, request.profile, request.fsm_state)
            return _pending(unit, run, plan_open(profile, run.spec.board_enabled), state)

        return await self._open("OpenInstance", request, pb.OpenInstanceResponse, mint)

    async def spawn(self, request: pb.SpawnSubagentRequest, caller: Caller) -> pb.SpawnSubagentResponse:
        _require(request.run_id, "run_id")
        _require(request.parent_agent_id, "parent_agent_id")
        _require(request.profile, "profile")
        caller.check_run(request.run_id)

        def mint(unit: RegistryUnit) -> InstanceRecord:
            run = _running(unit, request.run_id)
            parent = unit.instance(run.run_id, request.parent_agent_id)
            _not_handed_on(unit, run.run_id, parent.agent_id, "spawn a subagent of")
            profile = run.spec.profile(request.profile, run.run_id)
            plan = plan_spawn(profile, run.spec.board_enabled, parent.agent_id, parent.roster)
            return _pending(unit, run, plan, "")

        return await self._open("SpawnSubagent", request, pb.SpawnSubagentResponse, mint)

    async def fork(self, request: pb.ForkInstanceRequest, caller: Caller) -> pb.ForkInstanceResponse:
        _require(request.run_id, "run_id")
        _require(request.agent_id, "agent_id")
        caller.check_run(request.run_id)

        def mint(unit: RegistryUnit) -> InstanceRecord:
            run = _running(unit, request.run_id)
            source = unit.instance(run.run_id, request.agent_id)
            _not_handed_on(unit, run.run_id, source.agent_id, "fork")
            profile = run.spec.profile(source.profile, run.run_id)
            plan = plan_fork(profile, run.spec.board_enabled, source.agent_id, source.roster)
            return _pending(unit, run, plan, source.fsm_state)

        return await self._open("ForkInstance", request, pb.ForkInstanceResponse, mint)

    def get(self, request: pb.GetInstanceRequest, caller: Caller) -> pb.GetInstanceResponse:
        _require(request.run_id, "run_id")
        _require(request.agent_id, "agent_id")
        caller.check_run(request.run_id)

        def work(unit: RegistryUnit) -> InstanceRecord:
            unit.run(request.run_id)
            return unit.instance(request.run_id, request.agent_id)

        return pb.GetInstanceResponse(instance=instance_to_proto(self._repo.transact(work)))

    def list(self, request: pb.ListInstancesRequest, caller: Caller) -> pb.ListInstancesResponse:
        _require(request.run_id, "run_id")
        caller.check_run(request.run_id)
        size = page_size(request.page_size)
        scope = f"instances/{request.run_id}"
        after = decode_token(request.page_token, scope)

        def work(unit: RegistryUnit) -> list[InstanceRecord]:
            unit.run(request.run_id)
            return unit.list_instances(request.run_id, after, size + 1)

        found = self._repo.transact(work)
        page = found[:size]
        return pb.ListInstancesResponse(
            instances=[instance_to_proto(i) for i in page],
            next_page_token=encode_token(scope, page[-1].seq) if len(found) > size else "",
        )

    async def _open(self, method: str, request: Message, answer: type[Opened], mint: Mint) -> Opened:
        key = request_key(method, request)
        begun = await asyncio.to_thread(self._repo.transact, lambda unit: _begin(unit, key, answer, mint))
        if not isinstance(begun, InstanceRecord):
            return begun
        try:
            bind = modulestore_service_pb2.BindInstanceRequest.FromString(begun.bind_request)
            bound = await self._binder.bind(bind)
        except DomainError as err:
            if not isinstance(err, TRANSIENT):
                await asyncio.to_thread(
                    self._repo.transact, lambda unit: unit.drop_pending(begun.run_id, begun.agent_id)
                )
            raise
        roster = roster_from_proto(bound.roster)
        return await asyncio.to_thread(
            self._repo.transact, lambda unit: _finish(unit, key, answer, begun, roster)
        )


def _begin(
    unit: RegistryUnit, key: RequestKey | None, answer: type[Opened], mint: Mint
) -> Opened | InstanceRecord:
    """Step 1: the recorded answer, the pending instance of an earlier attempt, or a newly minted one. The
    pending row, unique per request id, is this step's claim: a concurrent first attempt waits on it."""
    if (recorded := unit.recall(key)) is not None:
        return answer.FromString(recorded)
    pending = unit.pending_for(key)
    if pending is None:
        pending = mint(unit)
        unit.add_pending(pending, key)
    return pending


def _finish(
    unit: RegistryUnit,
    key: RequestKey | None,
    answer: type[Opened],
    pending: InstanceRecord,
    roster: tuple[RosterRow, ...],
) -> Opened:
    """Step 3: record the roster once; a concurrent retry that got here first has recorded the answer (its
    claim makes this one wait for it)."""
    if (recorded := unit.claim(key)) is not None:
        return answer.FromString(recorded)
    opened = unit.complete(pending.run_id, pending.agent_id, roster)
    response = answer(instance=instance_to_proto(opened))
    unit.answer(key, response.SerializeToString())
    return response


def _not_handed_on(unit: RegistryUnit, run_id: str, agent_id: str, what: str) -> None:
    """A handed-on agent (or one being handed on) is no source: its modules are its successor's now."""
    successor = unit.successor_of(run_id, agent_id)
    if successor is None:
        return
    how = "handed its modules on to" if not successor.pending else "is being handed on to"
    raise FailedPrecondition(
        f"agent {agent_id} {how} {successor.agent_id}; cannot {what} it. Use {successor.agent_id} instead",
        reason=Reason.HANDED_ON,
        metadata={"run_id": run_id, "agent_id": agent_id, "successor_agent_id": successor.agent_id},
    )


def _running(unit: RegistryUnit, run_id: str) -> RunRecord:
    run = unit.run(run_id, share=True)
    require_running(run.run_id, run.status)
    return run


def _pending(unit: RegistryUnit, run: RunRecord, plan: BindPlan, fsm_state: str) -> InstanceRecord:
    """Mints the agent id (R36) and the exact BindInstance request that will bind it."""
    agent_id = agent_id_for(plan.profile, unit.next_agent_number(run.run_id, plan.profile))
    bind = bind_request(run.run_id, agent_id, plan, request_id=f"registry/{run.run_id}/{agent_id}")
    return InstanceRecord(
        run_id=run.run_id,
        agent_id=agent_id,
        profile=plan.profile,
        parent_agent_id=plan.parent_agent_id,
        cause=plan.cause,
        fsm_state=fsm_state,
        roster=(),
        created_us=now_us(),
        pending=True,
        bind_request=bind.SerializeToString(deterministic=True),
    )


def _require(value: str, field: str) -> None:
    if not value:
        raise missing(field)
