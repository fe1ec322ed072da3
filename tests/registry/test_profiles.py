"""Profiles at launch: the closed kind vocabulary (R1), history always on (R2), the board per run."""

from __future__ import annotations

import grpc

from ggmodules.common.v1 import common_pb2
from ggmodules.registry.v1 import registry_pb2
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness import refused
from tests.harness.registry import SIX, all_run_ids, create_run, module, open_instance, profile, rows


def _create(*profiles: registry_pb2.Profile) -> pb.CreateRunRequest:
    return pb.CreateRunRequest(name="refused", profiles=profiles, board_enabled=True)


def test_r1_unknown_kind_word_in_a_profile_is_refused_naming_it_and_the_six(registry: RegistryStub) -> None:
    before = all_run_ids(registry)
    bad = profile("coder", tasks=module(), histroy=module())
    refusal = refused(registry.CreateRun, _create(bad))
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_KIND")
    assert "'histroy'" in refusal.message
    assert all(word in refusal.message for word in SIX)
    assert refusal.violations and refusal.violations[0][0] == 'profiles[0].modules["histroy"]'
    assert all_run_ids(registry) == before


def test_r1_kind_words_are_exact_lower_case_words(registry: RegistryStub) -> None:
    refusal = refused(registry.CreateRun, _create(profile("coder", Tasks=module())))
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_KIND")
    assert "'Tasks'" in refusal.message


def test_r2_history_cannot_be_turned_off(registry: RegistryStub) -> None:
    before = all_run_ids(registry)
    bad = profile("coder", history=registry_pb2.ModuleConfig(enabled=False), tasks=module())
    refusal = refused(registry.CreateRun, _create(bad))
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "HISTORY_REQUIRED")
    assert "history" in refusal.message
    assert all_run_ids(registry) == before


def test_r2_every_instance_holds_a_window_even_when_its_profile_names_no_kind(registry: RegistryStub) -> None:
    run = create_run(registry, profile("bare"), board=False)
    assert run.profiles[0].modules["history"].enabled
    instance = open_instance(registry, run.run_id, "bare")
    held = rows(instance)
    assert held["history"].enabled and held["history"].store_id.startswith("history-")
    assert [w for w, r in held.items() if r.enabled] == ["history"]


def test_board_in_a_profile_is_refused_pointing_at_the_runs_board_switch(registry: RegistryStub) -> None:
    refusal = refused(registry.CreateRun, _create(profile("coder", board=module())))
    assert refusal.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refusal.reason == "INVALID_FIELD"
    assert "board_enabled" in refusal.message


def test_memories_default_to_a_scratchpad_scoped_to_the_instance(registry: RegistryStub) -> None:
    run = create_run(registry, profile("coder", memories=module(), skills=module()))
    configured = run.profiles[0].modules
    assert configured["memories"].strategy == common_pb2.MEMORY_STRATEGY_SCRATCHPAD
    assert configured["memories"].scope == common_pb2.MEMORY_SCOPE_INSTANCE
    assert configured["skills"].skills_directory == "coder"
    memories = rows(open_instance(registry, run.run_id, "coder"))["memories"]
    assert memories.strategy == common_pb2.MEMORY_STRATEGY_SCRATCHPAD
    assert memories.scope == common_pb2.MEMORY_SCOPE_INSTANCE
    assert memories.origin == common_pb2.ORIGIN_CREATED


def test_kinds_a_profile_turns_off_or_does_not_name_are_off(registry: RegistryStub) -> None:
    run = create_run(
        registry, profile("coder", tasks=registry_pb2.ModuleConfig(enabled=False), archive=module())
    )
    assert sorted(run.profiles[0].modules) == ["archive", "history"]
    held = rows(open_instance(registry, run.run_id, "coder"))
    assert {w for w, r in held.items() if r.enabled} == {"history", "archive", "board"}
    assert held["tasks"].store_id == "" and not held["tasks"].enabled


def test_malformed_profiles_are_refused_with_the_field_at_fault(registry: RegistryStub) -> None:
    cases = {
        "no profiles": _create(),
        "no name": _create(profile("")),
        "twice": _create(profile("coder"), profile("coder")),
        "bad name": _create(profile("has space")),
        "negative cap": _create(profile("coder", tasks=module(caps={"max_items": -1}))),
        "strategy off memories": _create(
            profile("coder", tasks=module(strategy=common_pb2.MEMORY_STRATEGY_SCRATCHPAD))
        ),
        "unknown scope": _create(profile("coder", memories=module(scope=9))),
    }
    for case, request in cases.items():
        refusal = refused(registry.CreateRun, request)
        assert (refusal.code, refusal.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD"), case
        assert refusal.violations, case
