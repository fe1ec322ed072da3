"""Rosters (R32) and store and agent identity (R34-R36)."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2, event_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1.modulestore_service_pb2_grpc import ModuleStoreServiceStub as ModuleStoreStub
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness.registry import (
    KIND_WORD,
    SIX,
    create_run,
    fork,
    full_profile,
    module,
    open_instance,
    profile,
    rows,
    spawn,
    store_ids,
)


def roster_events(modulestore: ModuleStoreStub, run_id: str, agent_id: str) -> list[event_pb2.Event]:
    events = modulestore.ReadOutbox(ms.ReadOutboxRequest(run_id=run_id, page_size=1000)).events
    return [e for e in events if e.agent_id == agent_id and e.WhichOneof("body") == "roster"]


def test_r32_an_instance_states_its_roster_one_row_per_kind_in_kind_order(
    registry: RegistryStub, modulestore: ModuleStoreStub
) -> None:
    run = create_run(
        registry,
        profile(
            "coder",
            memories=module(
                scope=common_pb2.MEMORY_SCOPE_AGENT,
                read_only=True,
                strategy=common_pb2.MEMORY_STRATEGY_MARKDOWN_INDEX,
            ),
            tasks=module(),
            skills=module(skills_directory="shared-skills"),
        ),
    )
    instance = open_instance(registry, run.run_id, "coder")
    assert [r.kind for r in instance.roster] == [1, 2, 3, 4, 5, 6]
    held = rows(instance)
    assert (held["history"].store_id, held["history"].enabled, held["history"].origin) == (
        "history-0",
        True,
        common_pb2.ORIGIN_CREATED,
    )
    assert held["history"].may_write
    memories = held["memories"]
    assert (memories.store_id, memories.enabled, memories.origin) == (
        "memories-0",
        True,
        common_pb2.ORIGIN_PROFILE,
    )
    assert memories.scope == common_pb2.MEMORY_SCOPE_AGENT
    assert memories.strategy == common_pb2.MEMORY_STRATEGY_MARKDOWN_INDEX
    assert not memories.may_write
    assert (held["tasks"].store_id, held["tasks"].origin) == ("tasks-0", common_pb2.ORIGIN_CREATED)
    assert (held["board"].store_id, held["board"].origin) == ("board-0", common_pb2.ORIGIN_RUN)
    assert (held["skills"].store_id, held["skills"].origin) == ("skills-0", common_pb2.ORIGIN_PROFILE)
    assert (held["archive"].store_id, held["archive"].enabled) == ("", False)

    got = registry.GetInstance(pb.GetInstanceRequest(run_id=run.run_id, agent_id=instance.agent_id)).instance
    assert got == instance


def test_r32_the_roster_is_stated_once_on_the_agents_stream_and_never_restated(
    registry: RegistryStub, modulestore: ModuleStoreStub
) -> None:
    run = create_run(registry, full_profile("coder"))
    original = open_instance(registry, run.run_id, "coder")
    events = roster_events(modulestore, run.run_id, original.agent_id)
    assert len(events) == 1
    stated = events[0]
    assert stated.stream_seq == 1
    assert list(stated.roster.rows) == list(original.roster)
    assert (stated.roster.profile, stated.roster.cause) == ("coder", "open")

    copy = fork(registry, run.run_id, original.agent_id)
    sub = spawn(registry, run.run_id, original.agent_id, "coder")
    assert len(roster_events(modulestore, run.run_id, original.agent_id)) == 1
    for opened, cause in ((copy, "fork"), (sub, "spawn")):
        [event] = roster_events(modulestore, run.run_id, opened.agent_id)
        assert list(event.roster.rows) == list(opened.roster)
        assert (event.roster.cause, event.roster.parent_agent_id) == (cause, original.agent_id)

    # One row per kind, in kind order, the kinds the profile turns off and the board of a run without one
    # included (disabled, no store).
    lean_run = create_run(registry, profile("lean", tasks=module()), board=False)
    lean = open_instance(registry, lean_run.run_id, "lean")
    [event] = roster_events(modulestore, lean_run.run_id, lean.agent_id)
    assert [(KIND_WORD[r.kind], r.enabled, bool(r.store_id)) for r in event.roster.rows] == [
        (word, word in ("history", "tasks"), word in ("history", "tasks")) for word in SIX
    ]
    assert list(event.roster.rows) == list(lean.roster)


def test_r34_store_ids_count_from_zero_per_kind_per_run(registry: RegistryStub) -> None:
    run = create_run(registry, full_profile("coder"))
    first = open_instance(registry, run.run_id, "coder")
    assert store_ids(first) == {word: f"{word}-0" for word in SIX}
    second = open_instance(registry, run.run_id, "coder")
    assert store_ids(second) == {
        "history": "history-1",
        "memories": "memories-1",
        "tasks": "tasks-1",
        "board": "board-0",
        "skills": "skills-0",
        "archive": "archive-1",
    }
    other_run = create_run(registry, full_profile("coder"))
    assert store_ids(open_instance(registry, other_run.run_id, "coder")) == {
        word: f"{word}-0" for word in SIX
    }


def test_r35_share_keeps_the_store_id_and_fork_mints_a_new_one(registry: RegistryStub) -> None:
    run = create_run(
        registry, full_profile("lead"), full_profile("helper", scope=common_pb2.MEMORY_SCOPE_INHERITED)
    )
    lead = open_instance(registry, run.run_id, "lead")
    helper = spawn(registry, run.run_id, lead.agent_id, "helper")
    shared = rows(helper)["memories"]
    assert shared.store_id == rows(lead)["memories"].store_id
    assert shared.origin == common_pb2.ORIGIN_INHERITED
    assert rows(helper)["board"].store_id == rows(lead)["board"].store_id
    assert rows(helper)["history"].store_id != rows(lead)["history"].store_id

    copy = fork(registry, run.run_id, lead.agent_id)
    assert rows(copy)["history"].store_id not in {
        rows(lead)["history"].store_id,
        rows(helper)["history"].store_id,
    }
    assert rows(copy)["history"].origin == common_pb2.ORIGIN_FORKED
    assert rows(copy)["board"].store_id == rows(lead)["board"].store_id


def test_spawn_of_an_inherited_memory_under_another_strategy_starts_its_own_store(
    registry: RegistryStub,
) -> None:
    run = create_run(
        registry,
        full_profile("lead"),
        full_profile(
            "helper",
            scope=common_pb2.MEMORY_SCOPE_INHERITED,
            strategy=common_pb2.MEMORY_STRATEGY_MARKDOWN_INDEX,
        ),
    )
    lead = open_instance(registry, run.run_id, "lead")
    helper = spawn(registry, run.run_id, lead.agent_id, "helper")
    own = rows(helper)["memories"]
    assert own.store_id != rows(lead)["memories"].store_id
    assert own.origin == common_pb2.ORIGIN_CREATED
    assert own.strategy == common_pb2.MEMORY_STRATEGY_MARKDOWN_INDEX


def test_r36_every_open_spawn_and_fork_mints_a_new_agent_id(registry: RegistryStub) -> None:
    run = create_run(registry, full_profile("coder"), full_profile("helper"))
    first = open_instance(registry, run.run_id, "coder")
    before = registry.GetInstance(pb.GetInstanceRequest(run_id=run.run_id, agent_id=first.agent_id)).instance
    second = open_instance(registry, run.run_id, "coder")
    helper = spawn(registry, run.run_id, first.agent_id, "helper")
    copy = fork(registry, run.run_id, first.agent_id)
    copy_of_helper = fork(registry, run.run_id, helper.agent_id)

    ids = [i.agent_id for i in (first, second, helper, copy, copy_of_helper)]
    assert ids == ["coder-0", "coder-1", "helper-0", "coder-2", "helper-1"]
    assert [i.cause for i in (first, helper, copy)] == ["open", "spawn", "fork"]
    assert (helper.parent_agent_id, copy.parent_agent_id) == (first.agent_id, first.agent_id)

    after = registry.GetInstance(pb.GetInstanceRequest(run_id=run.run_id, agent_id=first.agent_id)).instance
    assert after == before
    listed = registry.ListInstances(pb.ListInstancesRequest(run_id=run.run_id)).instances
    assert [i.agent_id for i in listed] == ids
    assert listed[0] == before
