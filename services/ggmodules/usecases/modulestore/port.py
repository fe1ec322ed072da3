"""The unit-of-work port: what ModuleStore's use cases ask of storage, inside one open transaction.

Storage implements it (storage/modulestore/unit.py). Methods load, persist and append; none decides who
may act or which stream gets which event. Rows the port hands back as `Any` are store rows (`store_id`,
`kind`, `head_seq`, … as in storage/modulestore/tables.py) for the use case to pass back or read ids off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import DomainError, PermissionDenied
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.archive_search import ArchiveSearch, SearchPage
from ggmodules.core.modules.contents import Contents
from ggmodules.core.modules.copying import Resolved
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.handover import HandoverKind, HandoverPlan
from ggmodules.core.modules.states import KindState
from ggmodules.core.modules.store import Applied, StoreHead
from ggmodules.core.roster import Binding, BindPlan, RosterRow
from ggmodules.core.vocabulary import MemoryScope, Origin, Outcome
from ggmodules.storage.fan_out import FanOutEntry


class Holder(Protocol):
    """One holder of a store, loaded with the store's head."""

    @property
    def agent_id(self) -> str | None: ...
    @property
    def may_write(self) -> bool | None: ...
    @property
    def active(self) -> bool | None: ...
    @property
    def read_set_id(self) -> str | None: ...
    @property
    def run_ended(self) -> str | None:
        """How the store's run ended (EndRun through any replica), None while it runs."""
    def head(self) -> StoreHead: ...


class Refusals(Protocol):
    """Refusals that name what is missing or held: they read the database to say so."""

    def missing(self, run_id: str, agent_id: str, store_id: str = "") -> DomainError:
        """Which of run, agent, store is unknown, in that order."""

    def not_a_holder(
        self, run_id: str, agent_id: str, store_id: str, *, let_go: bool = False
    ) -> PermissionDenied:
        """`agent_id` does not (or no longer) hold `store_id`; lists what it does hold."""

    def successor_of(self, run_id: str, agent_id: str) -> str | None:
        """The agent `agent_id` handed on to, or None if it never handed on."""

    def agent_exists(self, run_id: str, agent_id: str) -> bool: ...


class WriteUnit(Refusals, Protocol):
    def holders(self, run_id: str, store_id: str) -> Sequence[Holder]:
        """Every holder of the store (none: no such store), the store locked against concurrent writers."""

    def state(self, run_id: str, store_id: str, kind: Kind) -> KindState: ...
    def read_set(self, read_set_id: str) -> tuple[str, ...]: ...
    def read_sets(self, read_set_ids: Iterable[str]) -> dict[str, tuple[str, ...]]: ...
    def persist(self, run_id: str, store_id: str, read_set_id: str, applied: Applied) -> None:
        """The write's new head and state, its log rows and the writer's read set."""

    def append(self, events: Sequence[event_pb2.Event | FanOutEntry]) -> None:
        """To the outbox, on their streams in this order, once per transaction."""


class ToolCallUnit(WriteUnit, Protocol):
    def held(self, run_id: str, agent_id: str, kind: Kind | None = None) -> list[tuple[Any, str]]:
        """The store rows the agent actively holds, in kind order, each with its read-set id."""

    def search(self, run_id: str, store_id: str, head_seq: int, search: ArchiveSearch) -> SearchPage: ...
    def contents(self, run_id: str, store_id: str, read_set_id: str) -> Contents:
        """The store's contents as the holder with that read set sees them, as committed so far."""

    def contents_of(self, row: Any, read_set_id: str) -> Contents: ...


class Bound(Protocol):
    """A store bound to a new holder."""

    @property
    def store_id(self) -> str: ...
    @property
    def origin(self) -> Origin: ...
    @property
    def source_store_id(self) -> str: ...
    @property
    def head(self) -> StoreHead: ...
    @property
    def read_set_id(self) -> str: ...


class Received(Protocol):
    """What a successor holds for one kind after a handover."""

    @property
    def outcome(self) -> Outcome: ...
    @property
    def store_id(self) -> str: ...
    @property
    def origin(self) -> Origin: ...
    @property
    def may_write(self) -> bool: ...
    @property
    def scope(self) -> MemoryScope: ...
    @property
    def read_set_id(self) -> str: ...


class Held(Protocol):
    """A store a predecessor actively holds: its row, and the predecessor's read set on it."""

    @property
    def row(self) -> Any: ...
    @property
    def read_set_id(self) -> str: ...
    @property
    def store_id(self) -> str: ...
    @property
    def head(self) -> StoreHead: ...


class BindUnit(Refusals, Protocol):
    def bind_store(self, plan: BindPlan, binding: Binding, resolved: Resolved) -> Bound:
        """Mints, joins or shares the store `binding` asks for and makes the plan's agent a holder."""

    def add_agent(
        self, run_id: str, agent_id: str, profile: str, cause: str, parent_agent_id: str = ""
    ) -> None: ...
    def read_set(self, read_set_id: str) -> tuple[str, ...]: ...
    def append(self, events: Sequence[event_pb2.Event]) -> None: ...


class HandoverUnit(BindUnit, Protocol):
    def held_for_handover(self, run_id: str, agent_id: str) -> Mapping[Kind, Held]:
        """What the agent holds per kind, its stores locked as writes lock them; refuses an unknown run or
        agent."""

    def receive(
        self, plan: HandoverPlan, entry: HandoverKind, before: Held | None, carry_read_set: bool
    ) -> Received | None:
        """The successor's store for one kind (carried, re-pointed or minted), or None when dropped."""

    def let_go(self, run_id: str, agent_id: str) -> None:
        """Every holder row of the agent goes inactive."""

    def record_handover(self, run_id: str, agent_id: str, successor: str, cause: str) -> None: ...
    def roster_row(self, run_id: str, kind: Kind, received: Received | None) -> RosterRow: ...
    def restated(self, run_id: str, received: Received) -> tuple[Figures, Contents | None]:
        """What a store the successor received re-states about itself there (R31)."""
