"""Drives runs against the real services and folds what they reported: the console tests' vocabulary.

Events are read back from ModuleStore's outbox (ReadOutbox, filtered to the run): rosters, binds, writes,
snapshots, drains and re-states. Registry's run events reach Telemetry only through its WatchOutbox, which
the console tests do not need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ggmodules.common.v1 import common_pb2, event_pb2
from ggmodules.core.console import ConsoleModel, fold
from ggmodules.core.kinds import Kind
from ggmodules.core.telemetry.turns import validate_turn
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc
from ggmodules.registry.v1 import registry_pb2, registry_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2 as rpb
from ggmodules.transfer.v1 import transfer_service_pb2 as tpb
from ggmodules.transfer.v1 import transfer_service_pb2_grpc
from ggmodules.wire.console import events_from
from ggmodules.wire.telemetry import turn_event
from tests.harness import Suite
from tests.registry.builders import edge, fsm, module, profile

S = common_pb2


def full(name: str, *, scope: int = S.MEMORY_SCOPE_INSTANCE, **extra: Any) -> registry_pb2.Profile:
    """Every kind on; memories a scratchpad under `scope`."""
    return profile(
        name,
        memories=module(strategy=S.MEMORY_STRATEGY_SCRATCHPAD, scope=scope),
        tasks=module(),
        skills=module(**extra),
        archive=module(),
    )


@dataclass(frozen=True)
class Stubs:
    registry: registry_service_pb2_grpc.RegistryServiceStub
    modulestore: modulestore_service_pb2_grpc.ModuleStoreServiceStub
    transfer: transfer_service_pb2_grpc.TransferServiceStub

    @classmethod
    def of(cls, suite: Suite) -> Stubs:
        return cls(
            registry_service_pb2_grpc.RegistryServiceStub(suite.channel(suite.registry.address)),
            modulestore_service_pb2_grpc.ModuleStoreServiceStub(suite.channel(suite.modulestore.address)),
            transfer_service_pb2_grpc.TransferServiceStub(suite.channel(suite.transfer.address)),
        )


@dataclass
class Run:
    """One run driven through Registry, ModuleStore and Transfer."""

    suite: Suite | None
    run_id: str
    registry: registry_service_pb2_grpc.RegistryServiceStub
    modulestore: modulestore_service_pb2_grpc.ModuleStoreServiceStub
    transfer: transfer_service_pb2_grpc.TransferServiceStub
    rosters: dict[str, dict[Kind, str]] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        suite: Suite | None,
        *profiles: registry_pb2.Profile,
        board: bool = True,
        machine: registry_pb2.FsmDefinition | None = None,
        stubs: Stubs | None = None,
    ) -> Run:
        if stubs is None:
            assert suite is not None, "name the suite or the stubs to drive the run through"
            stubs = Stubs.of(suite)
        request = rpb.CreateRunRequest(name="console", profiles=profiles, board_enabled=board)
        if machine is not None:
            request.fsm.CopyFrom(machine)
        run = stubs.registry.CreateRun(request).run
        return cls(suite, run.run_id, stubs.registry, stubs.modulestore, stubs.transfer)

    def _keep(self, instance: registry_pb2.Instance) -> str:
        self.rosters[instance.agent_id] = {Kind(r.kind): r.store_id for r in instance.roster if r.enabled}
        return instance.agent_id

    def open(self, profile_name: str) -> str:
        req = rpb.OpenInstanceRequest(run_id=self.run_id, profile=profile_name)
        return self._keep(self.registry.OpenInstance(req).instance)

    def spawn(self, parent: str, profile_name: str) -> str:
        req = rpb.SpawnSubagentRequest(run_id=self.run_id, parent_agent_id=parent, profile=profile_name)
        return self._keep(self.registry.SpawnSubagent(req).instance)

    def fork(self, agent: str) -> str:
        req = rpb.ForkInstanceRequest(run_id=self.run_id, agent_id=agent)
        return self._keep(self.registry.ForkInstance(req).instance)

    def _successor(self, successor: str) -> str:
        req = rpb.GetInstanceRequest(run_id=self.run_id, agent_id=successor)
        return self._keep(self.registry.GetInstance(req).instance)

    def transition(self, agent: str, to_state: str) -> str:
        req = tpb.TransitionRequest(run_id=self.run_id, agent_id=agent, to_state=to_state)
        t = self.transfer.Transition(req)
        return self._successor(t.transfer.successor_agent_id)

    def exec(self, agent: str, profile_name: str) -> str:
        t = self.transfer.Exec(tpb.ExecRequest(run_id=self.run_id, agent_id=agent, profile=profile_name))
        return self._successor(t.transfer.successor_agent_id)

    def store(self, agent: str, kind: Kind) -> str:
        return self.rosters[agent][kind]

    def write(self, agent: str, kind: Kind, **op: Any) -> svc.WriteResponse:
        req = svc.WriteRequest(run_id=self.run_id, agent_id=agent, store_id=self.store(agent, kind), **op)
        response: svc.WriteResponse = self.modulestore.Write(req)
        return response

    def say(self, agent: str, *contents: str, start_turn: bool = True) -> svc.WriteResponse:
        messages = [ms.MessageInput(role="user", content=c) for c in contents]
        return self.write(
            agent, Kind.HISTORY, append_messages=svc.AppendMessages(messages=messages, start_turn=start_turn)
        )

    def pad(self, agent: str, text: str) -> svc.WriteResponse:
        return self.write(agent, Kind.MEMORIES, write_pad=svc.WritePad(text=text))

    def task(self, agent: str, title: str) -> svc.WriteResponse:
        return self.write(agent, Kind.TASKS, create_task=svc.CreateTask(title=title))

    def issue(self, agent: str, title: str) -> svc.WriteResponse:
        return self.write(agent, Kind.BOARD, create_issue=svc.CreateIssue(prefix="OPS", title=title))

    def archive(self, agent: str, title: str) -> svc.WriteResponse:
        thread = svc.ArchiveThread(title=title, messages=[ms.MessageInput(role="user", content=title)])
        return self.write(agent, Kind.ARCHIVE, archive_thread=thread)

    def events(self) -> list[event_pb2.Event]:
        """The run's events on ModuleStore's outbox, in origin order."""
        out: list[event_pb2.Event] = []
        after = 0
        while True:
            page = self.modulestore.ReadOutbox(
                svc.ReadOutboxRequest(run_id=self.run_id, after_origin_seq=after, page_size=1000)
            )
            out.extend(page.events)
            if not page.events or page.events[-1].origin_seq >= page.head_origin_seq:
                return out
            after = page.events[-1].origin_seq

    def fold(self, *extra: event_pb2.Event) -> ConsoleModel:
        """The run's events folded, with `extra` (e.g. turn reports) after them."""
        return fold(events_from([*self.events(), *extra]))

    def turn(self, agent: str, n: int, **tokens: int) -> event_pb2.Event:
        """A turn report as Telemetry's ReportTurn records it: tokens per kind word, on the agent's
        stores of those kinds."""
        modules = [(int(Kind[w.upper()]), self.store(agent, Kind[w.upper()]), t) for w, t in tokens.items()]
        return turn_event(validate_turn(self.run_id, agent, n, modules))


__all__ = ["Run", "edge", "fsm", "full", "module", "profile"]
