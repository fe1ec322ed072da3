"""Drives runs against the real services and reads the console back from a real Telemetry: the console
tests' vocabulary.

Registry, ModuleStore and Transfer take the run's calls; Telemetry (`Suite.telemetry`) follows ModuleStore's
and Registry's outboxes, and a runtime's turn reports reach it through ReportTurn. `Run.settle` waits until
Telemetry has stored every event ModuleStore holds for the run (and Registry's `created`); `Run.views` then
answers with the Inspect RPCs, `Run.stream` with the run's stream as Subscribe serves it (what the text
console folds).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc

from ggmodules.common.v1 import common_pb2, event_pb2
from ggmodules.core.kinds import Kind
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc
from ggmodules.registry.v1 import registry_pb2, registry_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2 as rpb
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tpb_tel
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc
from ggmodules.transfer.v1 import transfer_service_pb2 as tpb
from ggmodules.transfer.v1 import transfer_service_pb2_grpc
from tests.harness import Subscription, Suite, stubs
from tests.harness.registry import edge, fsm, module, profile

S = common_pb2
RPC_SECONDS = 30

# Per-turn costs as the views carry them (R43): measured (zero included), unmeasured, none by construction.
UNMEASURED = common_pb2.Cost(unmeasured=common_pb2.Unmeasured())
NONE_BY_CONSTRUCTION = common_pb2.Cost(none_by_construction=common_pb2.NoneByConstruction())


def measured(tokens: int) -> common_pb2.Cost:
    return common_pb2.Cost(measured_tokens=tokens)


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
    telemetry: telemetry_service_pb2_grpc.TelemetryServiceStub

    @classmethod
    def of(cls, suite: Suite) -> Stubs:
        return cls(
            stubs(suite.channel(suite.registry.address), "registry"),
            stubs(suite.channel(suite.modulestore.address), "modulestore"),
            transfer_service_pb2_grpc.TransferServiceStub(suite.channel(suite.transfer.address)),
            telemetry_service_pb2_grpc.TelemetryServiceStub(suite.channel(suite.telemetry.address)),
        )


@dataclass(frozen=True)
class Views:
    """A run's console as Telemetry serves it: the Inspect RPCs' answers, and GetStoreDetail on demand."""

    run_id: str
    telemetry: telemetry_service_pb2_grpc.TelemetryServiceStub
    instances: tpb_tel.InspectInstancesResponse
    modules: tpb_tel.InspectModulesResponse
    agents: tpb_tel.InspectAgentsResponse

    def folder(self, agent: str) -> tel.InstanceFolder:
        return next(f for f in self.instances.instances if f.agent_id == agent)

    def file(self, agent: str, kind: Kind) -> tel.ModuleFile:
        return next(m for m in self.folder(agent).modules if m.path == f"modules/{kind.word}")

    def overview(self, kind: Kind) -> tel.KindOverview:
        return next(o for o in self.modules.kinds if o.kind == kind)

    def row(self, profile_name: str, kind: Kind) -> tel.AgentModuleRow:
        section = next(p for p in self.agents.profiles if p.profile == profile_name)
        return next(r for r in section.modules if r.kind == kind)

    def detail(self, store_id: str) -> tel.StoreDetail:
        request = tpb_tel.GetStoreDetailRequest(run_id=self.run_id, store_id=store_id)
        answer: tpb_tel.GetStoreDetailResponse = self.telemetry.GetStoreDetail(request, timeout=RPC_SECONDS)
        return answer.detail


@dataclass
class Run:
    """One run driven through Registry, ModuleStore and Transfer, watched through Telemetry."""

    run_id: str
    stubs: Stubs
    rosters: dict[str, dict[Kind, str]] = field(default_factory=dict)
    # How far Telemetry's run stream has been read: its cursor, the highest ModuleStore origin_seq seen, and
    # whether Registry's `created` has arrived.
    _cursor: int = 0
    _modulestore_seq: int = 0
    _registry_seen: bool = False
    _turns: int = 0
    # Set by `finish`: `settle` then waits for Registry's `finished` too.
    _finish_wanted: bool = False
    _finish_seen: bool = False

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
        return cls(run.run_id, stubs)

    @property
    def modulestore(self) -> modulestore_service_pb2_grpc.ModuleStoreServiceStub:
        return self.stubs.modulestore

    # -- the run's calls

    def _keep(self, instance: registry_pb2.Instance) -> str:
        self.rosters[instance.agent_id] = {Kind(r.kind): r.store_id for r in instance.roster if r.enabled}
        return instance.agent_id

    def open(self, profile_name: str) -> str:
        req = rpb.OpenInstanceRequest(run_id=self.run_id, profile=profile_name)
        return self._keep(self.stubs.registry.OpenInstance(req).instance)

    def spawn(self, parent: str, profile_name: str) -> str:
        req = rpb.SpawnSubagentRequest(run_id=self.run_id, parent_agent_id=parent, profile=profile_name)
        return self._keep(self.stubs.registry.SpawnSubagent(req).instance)

    def fork(self, agent: str) -> str:
        req = rpb.ForkInstanceRequest(run_id=self.run_id, agent_id=agent)
        return self._keep(self.stubs.registry.ForkInstance(req).instance)

    def _successor(self, successor: str) -> str:
        req = rpb.GetInstanceRequest(run_id=self.run_id, agent_id=successor)
        return self._keep(self.stubs.registry.GetInstance(req).instance)

    def transition(self, agent: str, to_state: str) -> str:
        req = tpb.TransitionRequest(run_id=self.run_id, agent_id=agent, to_state=to_state)
        return self._successor(self.stubs.transfer.Transition(req).transfer.successor_agent_id)

    def exec(self, agent: str, profile_name: str) -> str:
        req = tpb.ExecRequest(run_id=self.run_id, agent_id=agent, profile=profile_name)
        return self._successor(self.stubs.transfer.Exec(req).transfer.successor_agent_id)

    def finish(self) -> None:
        self.stubs.registry.FinishRun(rpb.FinishRunRequest(run_id=self.run_id))
        self._finish_wanted = True

    def store(self, agent: str, kind: Kind) -> str:
        return self.rosters[agent][kind]

    def write(self, agent: str, kind: Kind, **op: Any) -> svc.WriteResponse:
        req = svc.WriteRequest(run_id=self.run_id, agent_id=agent, store_id=self.store(agent, kind), **op)
        response: svc.WriteResponse = self.stubs.modulestore.Write(req)
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

    def report(self, agent: str, turn: int, **tokens: int) -> int:
        """A runtime's turn report through ReportTurn, after Telemetry has caught up with the run's writes
        (as a runtime reports a turn after making it): tokens per kind word, on the agent's stores of those
        kinds. Its cursor."""
        self.settle()
        modules = [
            tel.ModuleTokens(kind=int(Kind[w.upper()]), store_id=self.store(agent, Kind[w.upper()]), tokens=t)
            for w, t in tokens.items()
        ]
        self._turns += 1
        request = tpb_tel.ReportTurnRequest(
            request_id=f"{self.run_id}/turn-{self._turns}", run_id=self.run_id, agent_id=agent, turn=turn,
            modules=modules,
        )
        cursor: int = self.stubs.telemetry.ReportTurn(request, timeout=RPC_SECONDS).cursor
        return cursor

    # -- what Telemetry holds

    def outbox(self) -> list[event_pb2.Event]:
        """The run's events on ModuleStore's outbox, in origin order (what Telemetry must catch up with)."""
        out: list[event_pb2.Event] = []
        after = 0
        while True:
            page = self.stubs.modulestore.ReadOutbox(
                svc.ReadOutboxRequest(run_id=self.run_id, after_origin_seq=after, page_size=1000)
            )
            out.extend(page.events)
            if not page.events or page.events[-1].origin_seq >= page.head_origin_seq:
                return out
            after = page.events[-1].origin_seq

    def settle(self) -> int:
        """Waits (on the run's Subscribe stream) until Telemetry has stored every event ModuleStore holds for
        the run and Registry's `created`; the cursor it has read to."""
        outbox = self.outbox()
        last = outbox[-1].origin_seq if outbox else 0
        def caught_up() -> bool:
            finished = self._finish_seen or not self._finish_wanted
            return self._registry_seen and finished and self._modulestore_seq >= last

        if caught_up():
            return self._cursor
        sub = Subscription(
            self.stubs.telemetry.Subscribe(
                tpb_tel.SubscribeRequest(run_id=self.run_id, after_cursor=self._cursor, heartbeat_ms=200)
            )
        )
        try:
            while not caught_up():
                cursor, ev = sub.next_event()
                self._cursor = cursor
                if ev.origin == "registry":
                    self._registry_seen = True
                    self._finish_seen = self._finish_seen or ev.run.status == "finished"
                elif ev.origin == "modulestore":
                    self._modulestore_seq = max(self._modulestore_seq, ev.origin_seq)
        finally:
            sub.close()
        return self._cursor

    def views(self) -> Views:
        """The Inspect RPCs' answers once Telemetry has caught up with the run."""
        self.settle()
        t, run_id = self.stubs.telemetry, self.run_id
        return Views(
            run_id,
            t,
            t.InspectInstances(tpb_tel.InspectInstancesRequest(run_id=run_id), timeout=RPC_SECONDS),
            t.InspectModules(tpb_tel.InspectModulesRequest(run_id=run_id), timeout=RPC_SECONDS),
            t.InspectAgents(tpb_tel.InspectAgentsRequest(run_id=run_id), timeout=RPC_SECONDS),
        )

    def stream(self) -> list[tel.StreamEvent]:
        """The run's whole stream as Subscribe serves it, up to the first heartbeat (Telemetry sends one
        once the subscriber has caught up), after Telemetry has caught up with the run."""
        self.settle()
        out: list[tel.StreamEvent] = []
        for response in self.subscribe(heartbeat_ms=50):
            if response.WhichOneof("item") == "heartbeat":
                return out
            out.append(response.event)
        raise AssertionError("the run's stream ended before it caught up")

    def subscribe(self, heartbeat_ms: int = 200) -> Iterator[tpb_tel.SubscribeResponse]:
        """The run's Subscribe stream from the start, with a deadline on the whole call."""
        call = self.stubs.telemetry.Subscribe(
            tpb_tel.SubscribeRequest(run_id=self.run_id, heartbeat_ms=heartbeat_ms), timeout=RPC_SECONDS
        )
        try:
            yield from call
        except grpc.RpcError as err:
            raise AssertionError(f"the run's stream failed: {err}") from err
        finally:
            call.cancel()


__all__ = [
    "NONE_BY_CONSTRUCTION",
    "UNMEASURED",
    "Run",
    "Stubs",
    "Views",
    "edge",
    "fsm",
    "full",
    "measured",
    "module",
    "profile",
]
