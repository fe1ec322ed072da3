"""PlanSuccessor (called by Transfer): a transfer's plan and its successor's reservation in one transaction.

Reads the run and the predecessor, checks them in the order a caller meets them (unknown run, unknown agent,
run not running, handed on, no such edge or profile, an exec successor that could not take the edges out of
the state it keeps), plans per kind (core.transfer.plan) and reserves the successor (successors.reserve's
rules: one successor per predecessor). Idempotent by request id: a resumed transfer gets the same plan and
the same successor. A refusal reserves nothing; a carried kind the predecessor does not hold (R26) is
refused KIND_NOT_HELD, its kinds in the metadata, for Transfer to end the run internal_error.
"""

from __future__ import annotations

from ggmodules.core.errors import FailedPrecondition, Reason, missing
from ggmodules.core.registry.identity import Caller
from ggmodules.core.registry.runs import RunSpec, agent_id_for, require_running
from ggmodules.core.registry.successors import check_cause, check_successor, handed_on
from ggmodules.core.transfer.checks import require_edges_takeable, require_not_handed_on, resolve_edge
from ggmodules.core.transfer.plan import (
    Edge,
    PredecessorLacks,
    Sides,
    TransferPlan,
    plan_exec,
    plan_transition,
)
from ggmodules.core.vocabulary import Cause
from ggmodules.internal.v1 import registry_internal_service_pb2 as pb
from ggmodules.server.registry.requests import request_key
from ggmodules.storage.registry import InstanceRecord, RegistryRepository, RegistryUnit
from ggmodules.storage.registry.repository import now_us
from ggmodules.wire.transfer import handover_request


class SuccessorPlanner:
    def __init__(self, repo: RegistryRepository) -> None:
        self._repo = repo

    def plan(self, request: pb.PlanSuccessorRequest, caller: Caller) -> pb.PlanSuccessorResponse:
        _require(request.run_id, "run_id")
        _require(request.predecessor_agent_id, "predecessor_agent_id")
        cause = check_cause(request.cause)
        _require(request.to_state if cause is Cause.TRANSITION else request.profile,
                 "to_state" if cause is Cause.TRANSITION else "profile")
        caller.check_run(request.run_id)
        key = request_key("PlanSuccessor", request)

        def work(unit: RegistryUnit) -> pb.PlanSuccessorResponse:
            if (answer := unit.claim(key)) is not None:
                return pb.PlanSuccessorResponse.FromString(answer)
            run = unit.run(request.run_id, share=True)
            predecessor = unit.instance(run.run_id, request.predecessor_agent_id)
            require_running(run.run_id, run.status, "a transfer needs a running run")
            require_not_handed_on(run.run_id, predecessor.agent_id, predecessor.successor_agent_id)
            plan, edge, fsm_state = _plan(run.run_id, run.spec, predecessor, request)
            check_successor(run.spec, run.run_id, plan.profile, fsm_state)
            existing = unit.successor_of(run.run_id, predecessor.agent_id)
            if existing is not None:
                raise handed_on(run.run_id, predecessor.agent_id, existing.agent_id, not existing.pending)
            agent_id = agent_id_for(plan.profile, unit.next_agent_number(run.run_id, plan.profile))
            unit.add_reservation(
                InstanceRecord(
                    run_id=run.run_id, agent_id=agent_id, profile=plan.profile,
                    parent_agent_id=predecessor.agent_id, cause=cause, fsm_state=fsm_state,
                    roster=(), created_us=now_us(), pending=True, reserved_for=predecessor.agent_id,
                ),
                key,
            )
            handover = handover_request(run.run_id, plan)
            handover.successor_agent_id = agent_id
            response = pb.PlanSuccessorResponse(
                successor_agent_id=agent_id, successor_profile=plan.profile, successor_fsm_state=fsm_state,
                from_state=edge.source if edge else "", handover=handover,
            )
            unit.answer(key, response.SerializeToString(deterministic=True))
            return response

        return self._repo.transact(work)


def _plan(
    run_id: str, spec: RunSpec, predecessor: InstanceRecord, request: pb.PlanSuccessorRequest
) -> tuple[TransferPlan, Edge | None, str]:
    """The per-kind plan, the edge a transition takes, and the state the successor runs in."""
    agent_id = predecessor.agent_id
    edge = None
    successor = request.profile
    if request.cause == "transition":
        edge, successor = resolve_edge(run_id, spec.fsm, agent_id, predecessor.fsm_state, request.to_state)
    successor_profile = spec.profile(successor, run_id)
    # An exec successor keeps the agent's state, unless it leaves the FSM.
    fsm_state = edge.target if edge else "" if request.leave_fsm else predecessor.fsm_state
    if edge is None and fsm_state:
        require_edges_takeable(run_id, spec.fsm, agent_id, fsm_state, successor_profile, spec.board_enabled)
    sides = Sides(
        predecessor_agent_id=agent_id,
        predecessor_profile=spec.profile(predecessor.profile, run_id),
        roster=predecessor.roster,
        successor=successor_profile,
        board_enabled=spec.board_enabled,
    )
    try:
        plan = plan_exec(sides) if edge is None else plan_transition(sides, edge)
    except PredecessorLacks as lack:
        raise FailedPrecondition(
            str(lack), reason=Reason.KIND_NOT_HELD,
            metadata={"run_id": run_id, "agent_id": agent_id, "kinds": ",".join(k.word for k in lack.kinds)},
        ) from None
    return plan, edge, fsm_state


def _require(value: str, field: str) -> None:
    if not value:
        raise missing(field)
