"""A crowd of clients on one run: every call carries a request id and is retried with that same id while
it is answered ABORTED (contention, R47: "retry with the same request id"); every other outcome is kept.

What each client acknowledged is recorded, so a test can read it all back afterwards: every write (store,
kind, unique marker, writer) and every agent that came into being (open, spawn, fork, transfer successor).
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from tests.harness import status_of
from tests.harness.registry import KIND_WORD, create_run, edge, fsm, module, profile

SIX = ("history", "memories", "tasks", "board", "skills", "archive")
# Enough for any contention the services refuse after their own retries; a test fails on more.
ABORTED_RETRIES = 20


@dataclass(frozen=True)
class Agent:
    """An agent as its client knows it: id, FSM state and roster store ids by kind word."""

    agent_id: str
    fsm_state: str
    stores: dict[str, str]


@dataclass(frozen=True)
class Ack:
    agent_id: str
    store_id: str
    word: str
    marker: str


@dataclass
class Tally:
    """Everything the crowd was answered, across its threads."""

    codes: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[str, str, str, str]] = field(default_factory=list)
    writes: list[Ack] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def code(self, name: str) -> None:
        with self._lock:
            self.codes[name] += 1

    def failed(self, method: str, code: str, reason: str, message: str) -> None:
        with self._lock:
            self.failures.append((method, code, reason, message[:300]))

    def wrote(self, ack: Ack) -> None:
        with self._lock:
            self.writes.append(ack)

    def born(self, agent_id: str) -> None:
        with self._lock:
            self.agents.append(agent_id)

    @property
    def defects(self) -> int:
        return self.codes["INTERNAL"] + self.codes["UNKNOWN"]


def ask(tally: Tally, method: Callable[..., Any], request: Any) -> Any | None:
    """The answer, or None once the call ended in anything but ABORTED (recorded as a failure)."""
    path = getattr(method, "_method", b"")  # bytes on a plain channel, str through an interceptor
    name = (path.decode() if isinstance(path, bytes) else path).rsplit("/", 1)[-1] or type(request).__name__
    for _ in range(ABORTED_RETRIES):
        try:
            answer = method(request, timeout=45)
        except grpc.RpcError as err:
            code, reason = status_of(err)
            tally.code(code.name)
            if code is grpc.StatusCode.ABORTED:
                continue  # the same request again, under the same request id
            tally.failed(name, code.name, reason, err.details() or "")  # type: ignore[attr-defined]
            return None
        tally.code("OK")
        return answer
    tally.failed(name, "ABORTED", "", f"still ABORTED after {ABORTED_RETRIES} attempts")
    return None


def _agent(agent_id: str, fsm_state: str, roster: Sequence[c.RosterRow]) -> Agent:
    return Agent(agent_id, fsm_state, {KIND_WORD[r.kind]: r.store_id for r in roster if r.enabled})


def _op(word: str, marker: str) -> dict[str, Any]:
    message = [ms.MessageInput(role="user", content=marker)]
    return {
        "history": {"append_messages": svc.AppendMessages(messages=message)},
        "memories": {"write_file": svc.WriteFile(name=marker, body=marker, index_line=marker)},
        "tasks": {"create_task": svc.CreateTask(title=marker)},
        "board": {"create_issue": svc.CreateIssue(prefix="LOAD", title=marker)},
        "skills": {"put_skill": svc.PutSkill(name=marker, description=marker, body=marker)},
        "archive": {"archive_thread": svc.ArchiveThread(title=marker, messages=message)},
    }[word]


class Client:
    """One client thread's work: opens a root and spawns subagents, then rounds of writes of every kind,
    with a fork, an exec and a transition along the way (through Transfer), each on its own agents."""

    def __init__(self, n: int, run_id: str, stubs: tuple[Any, Any, Any], tally: Tally) -> None:
        self.n = n
        self.run_id = run_id
        self.registry, self.modulestore, self.transfer = stubs
        self.tally = tally
        self.agents: list[Agent] = []
        self._random = random.Random(n)
        # How each call is made and retried (tests.replicas sends UNAVAILABLE again too).
        self.ask: Callable[[Tally, Callable[..., Any], Any], Any | None] = ask

    def request_id(self) -> str:
        return f"c{self.n}-{uuid.uuid4().hex}"

    def open(self, spawns: int) -> None:
        opened = self.ask(self.tally, self.registry.OpenInstance, reg.OpenInstanceRequest(
            request_id=self.request_id(), run_id=self.run_id, profile="worker"))
        if opened is None:
            return
        self._keep(opened.instance.agent_id, opened.instance.fsm_state, opened.instance.roster)
        for _ in range(spawns):
            spawned = self.ask(self.tally, self.registry.SpawnSubagent, reg.SpawnSubagentRequest(
                request_id=self.request_id(), run_id=self.run_id, parent_agent_id=opened.instance.agent_id,
                profile="worker"))
            if spawned is not None:
                self._keep(spawned.instance.agent_id, spawned.instance.fsm_state, spawned.instance.roster)

    def rounds(self, count: int) -> None:
        for r in range(count):
            if not self.agents:
                return
            slot = r % len(self.agents)
            for word in self._random.sample(SIX, 3):
                self.write(self.agents[slot], word)
            if r % 4 == 1:
                self.fork(self.agents[slot])
            elif r % 4 == 2:
                self.exec(slot)
            elif r % 4 == 3:
                self.transition(slot)

    def write(self, agent: Agent, word: str) -> None:
        store_id = agent.stores.get(word)
        if store_id is None:
            return
        marker = f"m{uuid.uuid4().hex[:16]}"
        written = self.ask(self.tally, self.modulestore.Write, svc.WriteRequest(
            request_id=self.request_id(), run_id=self.run_id, agent_id=agent.agent_id, store_id=store_id,
            **_op(word, marker)))
        if written is not None:
            self.tally.wrote(Ack(agent.agent_id, store_id, word, marker))

    def fork(self, agent: Agent) -> None:
        forked = self.ask(self.tally, self.registry.ForkInstance, reg.ForkInstanceRequest(
            request_id=self.request_id(), run_id=self.run_id, agent_id=agent.agent_id))
        if forked is not None:
            self._keep(forked.instance.agent_id, forked.instance.fsm_state, forked.instance.roster)

    def exec(self, slot: int) -> None:
        agent = self.agents[slot]
        answer = self.ask(self.tally, self.transfer.Exec, tr.ExecRequest(
            request_id=self.request_id(), run_id=self.run_id, agent_id=agent.agent_id,
            profile="reviewer" if agent.fsm_state == "review" else "worker"))
        if answer is not None:
            self._succeed(slot, answer.transfer, agent.fsm_state)

    def transition(self, slot: int) -> None:
        """Along the FSM's edge for an agent in a state; an exec for a subagent (spawned outside it)."""
        agent = self.agents[slot]
        if not agent.fsm_state:
            self.exec(slot)
            return
        to_state = "review" if agent.fsm_state == "work" else "work"
        answer = self.ask(self.tally, self.transfer.Transition, tr.TransitionRequest(
            request_id=self.request_id(), run_id=self.run_id, agent_id=agent.agent_id, to_state=to_state))
        if answer is not None:
            self._succeed(slot, answer.transfer, to_state)

    def _succeed(self, slot: int, transfer: Any, fsm_state: str) -> None:
        self.agents[slot] = _agent(transfer.successor_agent_id, fsm_state, transfer.roster)
        self.tally.born(transfer.successor_agent_id)

    def _keep(self, agent_id: str, fsm_state: str, roster: Sequence[c.RosterRow]) -> None:
        self.agents.append(_agent(agent_id, fsm_state, roster))
        self.tally.born(agent_id)


def crowd(clients: Sequence[Client], work: Callable[[Client], None]) -> None:
    """Runs `work` for every client at once, each on its own thread, started together."""
    start = threading.Barrier(len(clients))

    def run(client: Client) -> None:
        start.wait()
        work(client)

    threads = [threading.Thread(target=run, args=(cl,), name=f"client-{cl.n}") for cl in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def crowd_run(registry: Any) -> str:
    """A run of workers and reviewers sharing memories, tasks, skills and archive: the crowd's run."""
    shared = {
        "memories": module(strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX, scope=c.MEMORY_SCOPE_AGENT),
        "tasks": module(),
        "skills": module(skills_directory="shared"),
        "archive": module(),
    }
    machine = fsm(
        "work", {"work": "worker", "review": "reviewer"},
        edge("work", "review", "history", "tasks"), edge("review", "work", "history", "tasks"),
    )
    run = create_run(registry, profile("worker", **shared), profile("reviewer", **shared), machine=machine)
    return str(run.run_id)
