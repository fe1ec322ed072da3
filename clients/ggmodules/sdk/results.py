"""What calls return: frozen dataclasses in the seed's words, so a runtime never touches generated messages.

A module's contents (what GetStore and the Get<Kind> reads show) are contents.py.

Enumerated fields are `StrEnum` members (they compare equal to their words); None stands for a value the
service left unspecified (the scope of a non-memories roster row, the origin of a kind that is off).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import grpc

from ggmodules.sdk.contents import Contents, FoundThread
from ggmodules.sdk.errors import TransferNotCompletedError
from ggmodules.sdk.words import (
    Kind,
    MemoryScope,
    MemoryStrategy,
    Origin,
    Outcome,
    RunStatus,
    SearchMode,
    TransferKind,
    TransferState,
)

if TYPE_CHECKING:
    from ggmodules.sdk.profiles import Fsm, Profile

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a List call; iterate it for its items, pass `next_page_token` for the next page."""

    items: tuple[T, ...]
    next_page_token: str = ""

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> T:
        return self.items[index]


@dataclass(frozen=True)
class Caps:
    """Limits of one store; zero means unlimited."""

    max_items: int = 0
    max_bytes: int = 0


@dataclass(frozen=True)
class Figures:
    items: int = 0
    bytes: int = 0
    writes: int = 0


@dataclass(frozen=True)
class RosterRow:
    """What an instance holds for one kind, stated once as it opens (R32)."""

    kind: Kind
    store_id: str
    enabled: bool
    origin: Origin | None
    may_write: bool
    scope: MemoryScope | None = None
    strategy: MemoryStrategy | None = None


@dataclass(frozen=True)
class Run:
    id: str
    name: str
    profiles: tuple[Profile, ...]
    board: bool
    status: RunStatus | None
    status_detail: str = ""
    fsm: Fsm | None = None
    created_at: datetime | None = None


@dataclass(frozen=True)
class Instance:
    """One incarnation of an agent; its roster never changes (R36)."""

    run_id: str
    agent_id: str
    profile: str
    cause: str
    roster: tuple[RosterRow, ...]
    parent_agent_id: str = ""
    predecessor_agent_id: str = ""
    fsm_state: str = ""
    created_at: datetime | None = None
    # The transfer successor this instance handed its modules on to, once it has (its writes are refused).
    successor_agent_id: str = ""
    # A transfer successor's opening note: what arrived, and why anything was re-initialized.
    opening_note: str = ""

    def row(self, kind: Kind | str) -> RosterRow:
        """The roster row of a kind (every instance has one per kind)."""
        for r in self.roster:
            if r.kind == kind:
                return r
        raise KeyError(f"{self.agent_id} reported no roster row for {kind!r}")


@dataclass(frozen=True)
class Holder:
    agent_id: str
    origin: Origin | None
    may_write: bool
    active: bool


@dataclass(frozen=True)
class SearchPage(Page[FoundThread]):
    """One page of an archive search, best first; `mode` is the one that answered ("text" when semantic
    search was asked of a ModuleStore without it)."""

    mode: SearchMode = SearchMode.TEXT


@dataclass(frozen=True)
class Store:
    """A backing store; `contents` is filled by GetStore (as the reading holder sees it), not by List."""

    run_id: str
    id: str
    kind: Kind | None
    caps: Caps
    holders: tuple[Holder, ...]
    figures: Figures
    forked_from: str = ""
    strategy: MemoryStrategy | None = None
    skills_directory: str = ""
    contents: Contents | None = None


@dataclass(frozen=True)
class WriteResult:
    """What one write did: the store's figures after it, and what it minted (0 / "" when nothing)."""

    store_id: str
    figures: Figures
    task_id: int = 0
    issue_id: str = ""
    thread_id: int = 0
    last_seq: int = 0
    turn: int = 0


@dataclass(frozen=True)
class PromptMessage:
    role: str
    content: str
    # "system_prompt", "thread", "open_view", "pinned_block", "tasks", "scratchpad", "memory_index", ...
    section: str


@dataclass(frozen=True)
class Contribution:
    """One module's part of its holder's prompt (R10); board and archive contribute nothing (R8)."""

    kind: Kind | None
    store_id: str
    contributes_nothing: bool
    messages: tuple[PromptMessage, ...]


@dataclass(frozen=True)
class ToolDefinition:
    kind: Kind | None
    name: str
    description: str
    parameters_json_schema: str

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments object, parsed."""
        schema: dict[str, Any] = json.loads(self.parameters_json_schema)
        return schema


@dataclass(frozen=True)
class ToolResult:
    """A tool call's result as the JSON text to hand back to the model."""

    result_json: str

    def value(self) -> Any:
        return json.loads(self.result_json)


@dataclass(frozen=True)
class KindOutcome:
    """What a transfer did with one kind (R21); store ids are "" where that side held none (R35)."""

    kind: Kind
    outcome: Outcome | None
    store_id_before: str
    store_id_after: str
    # Why, when there is something to say (a re-initialized memories store says why, in a sentence).
    note: str = ""


@dataclass(frozen=True)
class Transfer(Generic[A]):
    """One transition or exec: a predecessor handing its modules on to a new successor agent (R36).

    `successor` is the successor as an agent of the caller's mode, built from the roster in the answer."""

    transfer_id: str
    request_id: str
    run_id: str
    kind: TransferKind | None
    state: TransferState | None
    predecessor_agent_id: str
    successor_agent_id: str
    successor_profile: str
    # One per kind either side holds, in kind order.
    outcomes: tuple[KindOutcome, ...]
    # The successor's roster (R32).
    roster: tuple[RosterRow, ...]
    opening_note: str = ""
    # FAILED only: why.
    failure: str = ""
    # Transition only: the edge taken.
    from_state: str = ""
    to_state: str = ""
    created_at: datetime | None = None
    completed_at: datetime | None = None
    # The FSM state the successor runs: `to_state` for a transition, the predecessor's for an exec (known to
    # `agent.exec`; the contract does not carry it, so "" for an exec made or looked up by ids).
    successor_fsm_state: str = ""
    _successor: A | None = field(default=None, repr=False, compare=False)

    def outcome(self, kind: Kind | str) -> KindOutcome:
        """The outcome of one kind; `KeyError` when neither side held it."""
        for o in self.outcomes:
            if o.kind == kind:
                return o
        raise KeyError(f"transfer {self.transfer_id} moved no {kind} module")

    @property
    def successor_instance(self) -> Instance:
        """The successor's instance as Registry shows it once the transfer has completed."""
        return Instance(
            run_id=self.run_id,
            agent_id=self.successor_agent_id,
            profile=self.successor_profile,
            cause=self.kind.value if self.kind else "",
            roster=self.roster,
            predecessor_agent_id=self.predecessor_agent_id,
            fsm_state=self.successor_fsm_state,
            created_at=self.completed_at,
            opening_note=self.opening_note,
        )

    @property
    def successor(self) -> A:
        """The successor agent, ready to act; only a completed transfer has one."""
        if self._successor is None:
            state = self.state.value if self.state else "unknown"
            raise TransferNotCompletedError(
                grpc.StatusCode.FAILED_PRECONDITION, "",
                f"transfer {self.transfer_id} is {state}: only a completed transfer has a successor"
                + (f" ({self.failure})" if self.failure else ""),
                {"transfer_id": self.transfer_id, "state": state},
            )
        return self._successor

    def bind(self, agent: Callable[[Instance], B]) -> Transfer[B]:
        """The same transfer with its successor made an agent by `agent` (when it has completed)."""
        done = self.state == TransferState.COMPLETED and bool(self.successor_agent_id)
        successor = agent(self.successor_instance) if done else None
        return cast("Transfer[B]", replace(cast("Transfer[Any]", self), _successor=successor))
