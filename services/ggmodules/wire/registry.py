"""Conversion between Registry's protobuf messages and its domain types."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from google.protobuf.timestamp_pb2 import Timestamp

from ggmodules.common.v1 import common_pb2
from ggmodules.core.kinds import Kind
from ggmodules.core.registry.fsm import Fsm, FsmEdgeInput, FsmInput, FsmStateInput
from ggmodules.core.registry.profiles import ModuleInput, Profile, ProfileInput
from ggmodules.core.registry.records import InstanceRecord, RunRecord
from ggmodules.core.roster import BindPlan, RosterRow
from ggmodules.core.vocabulary import TRANSFER_CAUSES, MemoryScope, MemoryStrategy, Origin
from ggmodules.modulestore.v1 import modulestore_pb2, modulestore_service_pb2
from ggmodules.registry.v1 import registry_pb2

# -- requests into the domain


def profile_inputs(profiles: Iterable[registry_pb2.Profile]) -> list[ProfileInput]:
    return [
        ProfileInput(
            name=p.name,
            modules={
                word: ModuleInput(
                    enabled=m.enabled, strategy=int(m.strategy), scope=int(m.scope),
                    read_only=m.read_only, max_items=m.caps.max_items, max_bytes=m.caps.max_bytes,
                    skills_directory=m.skills_directory,
                )
                for word, m in p.modules.items()
            },
        )
        for p in profiles
    ]


def fsm_input(fsm: registry_pb2.FsmDefinition | None) -> FsmInput | None:
    if fsm is None:
        return None
    return FsmInput(
        initial=fsm.initial,
        states=tuple(FsmStateInput(s.name, s.profile) for s in fsm.states),
        edges=tuple(FsmEdgeInput(getattr(e, "from"), e.to, tuple(e.carry)) for e in fsm.edges),
    )


def roster_from_proto(rows: Iterable[common_pb2.RosterRow]) -> tuple[RosterRow, ...]:
    return tuple(
        RosterRow(
            kind=Kind(r.kind), store_id=r.store_id, enabled=r.enabled, origin=Origin(r.origin),
            scope=MemoryScope(r.scope), may_write=r.may_write, strategy=MemoryStrategy(r.strategy),
        )
        for r in rows
    )


def bind_request(
    run_id: str, agent_id: str, plan: BindPlan, request_id: str
) -> modulestore_service_pb2.BindInstanceRequest:
    return modulestore_service_pb2.BindInstanceRequest(
        request_id=request_id,
        run_id=run_id,
        agent_id=agent_id,
        profile=plan.profile,
        parent_agent_id=plan.parent_agent_id,
        cause=plan.cause.word,
        bindings=[
            modulestore_pb2.Binding(
                kind=common_pb2.Kind.ValueType(b.kind),
                action=modulestore_pb2.BindAction.ValueType(b.action),
                source_store_id=b.source_store_id,
                named_key=b.named_key,
                origin=common_pb2.Origin.ValueType(b.origin),
                may_write=b.may_write,
                caps=common_pb2.Caps(max_items=b.caps.max_items, max_bytes=b.caps.max_bytes),
                strategy=common_pb2.MemoryStrategy.ValueType(b.strategy),
                scope=common_pb2.MemoryScope.ValueType(b.scope),
                skills_directory=b.skills_directory,
                read_set_source_agent_id=b.read_set_source_agent_id,
            )
            for b in plan.bindings
        ],
    )


# -- the domain out to responses


def run_to_proto(run: RunRecord) -> registry_pb2.Run:
    return registry_pb2.Run(
        run_id=run.run_id,
        name=run.spec.name,
        profiles=[profile_to_proto(p) for p in run.spec.profiles],
        board_enabled=run.spec.board_enabled,
        fsm=fsm_to_proto(run.spec.fsm) if run.spec.fsm is not None else None,
        status=registry_pb2.RunStatus.ValueType(run.status),
        status_detail=run.status_detail,
        create_time=timestamp(run.created_us),
    )


def profile_to_proto(profile: Profile) -> registry_pb2.Profile:
    """The profile as it runs: every enabled kind, defaults filled in; kinds not named are off."""
    return registry_pb2.Profile(
        name=profile.name,
        modules={
            kind.word: registry_pb2.ModuleConfig(
                enabled=True,
                strategy=common_pb2.MemoryStrategy.ValueType(spec.strategy),
                scope=common_pb2.MemoryScope.ValueType(spec.scope),
                read_only=spec.read_only,
                caps=common_pb2.Caps(max_items=spec.caps.max_items, max_bytes=spec.caps.max_bytes),
                skills_directory=spec.skills_directory,
            )
            for kind, spec in profile.modules.items()
        },
    )


def fsm_to_proto(fsm: Fsm) -> registry_pb2.FsmDefinition:
    edges = []
    for e in fsm.edges:
        edge = registry_pb2.FsmEdge(to=e.target, carry=[k.word for k in e.carry])
        setattr(edge, "from", e.source)
        edges.append(edge)
    return registry_pb2.FsmDefinition(
        initial=fsm.initial,
        states=[registry_pb2.FsmState(name=s.name, profile=s.profile) for s in fsm.states],
        edges=edges,
    )


def instance_to_proto(inst: InstanceRecord) -> registry_pb2.Instance:
    # The record keeps the agent an instance came from in one column; the contract names it by how it came.
    succeeded = inst.cause in TRANSFER_CAUSES
    return registry_pb2.Instance(
        run_id=inst.run_id,
        agent_id=inst.agent_id,
        profile=inst.profile,
        parent_agent_id="" if succeeded else inst.parent_agent_id,
        predecessor_agent_id=inst.parent_agent_id if succeeded else "",
        cause=inst.cause.word,
        instance_cause=common_pb2.InstanceCause.ValueType(inst.cause.number),
        roster=roster_to_proto(inst.roster),
        create_time=timestamp(inst.created_us),
        fsm_state=inst.fsm_state,
        successor_agent_id=inst.successor_agent_id,
        opening_note=inst.opening_note,
    )


def roster_to_proto(rows: Sequence[RosterRow]) -> list[common_pb2.RosterRow]:
    return [
        common_pb2.RosterRow(
            kind=common_pb2.Kind.ValueType(r.kind),
            store_id=r.store_id,
            enabled=r.enabled,
            origin=common_pb2.Origin.ValueType(r.origin),
            scope=common_pb2.MemoryScope.ValueType(r.scope),
            may_write=r.may_write,
            strategy=common_pb2.MemoryStrategy.ValueType(r.strategy),
        )
        for r in rows
    ]


def timestamp(us: int) -> Timestamp:
    ts = Timestamp()
    ts.FromMicroseconds(us)
    return ts
