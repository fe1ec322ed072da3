"""Why an instance exists, as an enum (common.v1.InstanceCause) beside the word every roster event and
Registry instance has always carried (R32); a bind naming no cause the vocabulary knows is refused and
binds nothing."""

from __future__ import annotations

import grpc

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1.modulestore_service_pb2_grpc import ModuleStoreServiceStub as ModuleStoreStub
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness.handing import carry_all, hand_over
from tests.harness.modulestore import new_run, open_agent, open_bindings, streams
from tests.harness.refusals import assert_refused
from tests.harness.registry import create_run, fork, full_profile, open_instance, spawn
from tests.registry.test_rosters import roster_events


def test_r32_a_roster_event_carries_its_cause_as_an_enum_and_as_the_word(
    registry: RegistryStub, modulestore: ModuleStoreStub
) -> None:
    run = create_run(registry, full_profile("coder"))
    original = open_instance(registry, run.run_id, "coder")
    copy = fork(registry, run.run_id, original.agent_id)
    sub = spawn(registry, run.run_id, original.agent_id, "coder")
    stated = {
        agent.agent_id: roster_events(modulestore, run.run_id, agent.agent_id)[0].roster
        for agent in (original, copy, sub)
    }
    assert [(r.cause, r.instance_cause) for r in stated.values()] == [
        ("open", common_pb2.INSTANCE_CAUSE_OPEN),
        ("fork", common_pb2.INSTANCE_CAUSE_FORK),
        ("spawn", common_pb2.INSTANCE_CAUSE_SPAWN),
    ]
    # Registry's instance says the same, as it answered and as GetInstance reads it.
    for answered, (word, number) in zip(
        (original, copy, sub), [(r.cause, r.instance_cause) for r in stated.values()], strict=True
    ):
        read = registry.GetInstance(
            pb.GetInstanceRequest(run_id=run.run_id, agent_id=answered.agent_id)
        ).instance
        answers = {(answered.cause, answered.instance_cause), (read.cause, read.instance_cause)}
        assert answers == {(word, number)}


def test_a_bind_naming_an_unknown_cause_is_refused_and_binds_nothing(modulestore: ModuleStoreStub) -> None:
    run_id = new_run()
    request = ms.BindInstanceRequest(
        request_id=f"{run_id}/bind", run_id=run_id, agent_id="coder-0", profile="coder", cause="adopt",
        bindings=open_bindings(),
    )
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    refusal = assert_refused(modulestore.BindInstance, invalid, "INVALID_FIELD", request)
    assert "cause must be one of open, spawn, fork, transition, exec, not 'adopt'" in refusal.message
    assert [field for field, _ in refusal.violations] == ["cause"]
    outbox = modulestore.ReadOutbox(ms.ReadOutboxRequest(run_id=run_id, page_size=100)).events
    assert list(outbox) == []


def test_r36_a_successors_roster_event_carries_the_transfers_cause_as_an_enum(
    modulestore: ModuleStoreStub,
) -> None:
    run_id = new_run()
    for cause, number in (("transition", common_pb2.INSTANCE_CAUSE_TRANSITION),
                          ("exec", common_pb2.INSTANCE_CAUSE_EXEC)):
        planner = open_agent(modulestore, run_id, f"planner-{cause}")
        hand_over(modulestore, planner, f"coder-{cause}", carry_all(), cause=cause)
        stream = streams(modulestore, run_id)[f"coder-{cause}"]
        [roster] = [ev.roster for ev in stream if ev.HasField("roster")]
        assert (roster.cause, roster.instance_cause) == (cause, number)
