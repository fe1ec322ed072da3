"""Between Transfer's contracts (and the Registry/ModuleStore messages it reads and sends) and its domain."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2
from ggmodules.core.kinds import kind_from_word
from ggmodules.core.registry.fsm import Fsm, FsmEdge, FsmState
from ggmodules.core.registry.profiles import validate_profiles
from ggmodules.core.registry.runs import RunSpec
from ggmodules.core.transfer.plan import Handing, TransferPlan
from ggmodules.core.transfer.record import TransferRecord
from ggmodules.core.vocabulary import RunStatus, TransferKind, TransferState
from ggmodules.modulestore.v1 import modulestore_pb2, modulestore_service_pb2
from ggmodules.registry.v1 import registry_pb2
from ggmodules.transfer.v1 import transfer_pb2
from ggmodules.wire.registry import profile_inputs, timestamp

# -- what Registry answers, into the domain


def run_spec(run: registry_pb2.Run) -> tuple[RunSpec, RunStatus]:
    """The run as launched (profiles with defaults filled in, board switch, FSM) and its status."""
    fsm = None
    if run.HasField("fsm") and run.fsm.states:
        fsm = Fsm(
            run.fsm.initial,
            tuple(FsmState(s.name, s.profile) for s in run.fsm.states),
            tuple(
                FsmEdge(getattr(e, "from"), e.to, tuple(kind_from_word(w) for w in e.carry))
                for e in run.fsm.edges
            ),
        )
    spec = RunSpec(run.name, validate_profiles(profile_inputs(run.profiles)), run.board_enabled, fsm)
    return spec, RunStatus(run.status)


# -- the domain out to ModuleStore


def handover_request(run_id: str, plan: TransferPlan) -> modulestore_service_pb2.HandoverRequest:
    """The Handover to send, without its request id and successor (journaled before the successor exists)."""
    return modulestore_service_pb2.HandoverRequest(
        run_id=run_id,
        predecessor_agent_id=plan.predecessor_agent_id,
        profile=plan.profile,
        cause=plan.kind.cause,
        kinds=[
            modulestore_service_pb2.HandoverKind(
                kind=common_pb2.Kind.ValueType(k.kind),
                outcome=common_pb2.Outcome.ValueType(k.outcome),
                binding=_binding(k.handing) if k.handing is not None else None,
                note=k.note,
            )
            for k in plan.kinds
        ],
        opening_note=plan.opening_note,
    )


def _binding(h: Handing) -> modulestore_pb2.Binding:
    return modulestore_pb2.Binding(
        kind=common_pb2.Kind.ValueType(h.kind),
        action=modulestore_pb2.BindAction.ValueType(h.action or 0),
        source_store_id=h.source_store_id,
        named_key=h.named_key,
        origin=common_pb2.Origin.ValueType(h.origin),
        may_write=h.may_write,
        caps=common_pb2.Caps(max_items=h.caps.max_items, max_bytes=h.caps.max_bytes),
        strategy=common_pb2.MemoryStrategy.ValueType(h.strategy),
        scope=common_pb2.MemoryScope.ValueType(h.scope),
        skills_directory=h.skills_directory,
        read_set_source_agent_id=h.read_set_source_agent_id,
    )


# -- the journal out to responses


def transfer_to_proto(record: TransferRecord) -> transfer_pb2.Transfer:
    handed = modulestore_service_pb2.HandoverResponse.FromString(record.handover)
    planned = modulestore_service_pb2.HandoverRequest.FromString(record.plan)
    notes = {k.kind: k.note for k in planned.kinds}
    outcomes = []
    for o in handed.outcomes:
        outcome = common_pb2.KindOutcome()
        outcome.CopyFrom(o)
        outcome.note = outcome.note or notes.get(o.kind, "")
        outcomes.append(outcome)
    return transfer_pb2.Transfer(
        transfer_id=record.transfer_id,
        request_id=record.request_id,
        run_id=record.run_id,
        kind=transfer_pb2.TransferKind.ValueType(record.kind),
        predecessor_agent_id=record.predecessor_agent_id,
        successor_agent_id=record.successor_agent_id,
        successor_profile=record.successor_profile,
        from_state=record.from_state if record.kind is TransferKind.TRANSITION else "",
        to_state=record.to_state if record.kind is TransferKind.TRANSITION else "",
        state=transfer_pb2.TransferState.ValueType(record.state),
        outcomes=outcomes,
        roster=handed.roster,
        opening_note=record.opening_note,
        failure=record.failure if record.state is TransferState.FAILED else "",
        create_time=timestamp(record.created_us),
        complete_time=timestamp(record.completed_us) if record.completed_us else None,
    )
