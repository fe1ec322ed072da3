"""ModuleStore's tables. Stores fork copy-on-write: append-only logs (messages, archived threads) are read
through the parent chain up to `parent_limit`, so a fork inserts one store row whatever the log's size.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel

from ggmodules.storage.columns import SEQ, seq_field
from ggmodules.storage.idempotency import IdempotencyRow
from ggmodules.storage.outbox import OutboxRow, StreamHeadRow
from ggmodules.storage.outbox_pruning import OutboxPositionRow

# SQLite: rows live in their primary-key B-tree (no separate rowid table), so a commit writes fewer pages.
CLUSTERED = {"sqlite_with_rowid": False}


class MsStore(SQLModel, table=True):
    __tablename__ = "ms_stores"
    __table_args__ = (Index("ix_ms_stores_kind", "run_id", "kind", "n"), CLUSTERED)

    run_id: str = Field(primary_key=True)
    store_id: str = Field(primary_key=True)
    kind: int
    # The n of `<kind>-<n>` (R34), for ordering.
    n: int = seq_field(default=...)
    max_items: int = seq_field()
    max_bytes: int = seq_field()
    strategy: int = 0
    skills_directory: str = ""
    forked_from: str = ""
    # Log lineage: entries with seq <= parent_limit are read from the parent store (and its parents).
    parent_store_id: str = ""
    parent_limit: int = seq_field()
    head_seq: int = seq_field()
    turn: int = seq_field()
    items: int = seq_field()
    bytes: int = seq_field()
    writes: int = seq_field()
    # The kind's mutable state as JSON (see ggmodules.core.modules.states).
    state: str = Field(default="{}", sa_column=Column(Text, nullable=False))


class MsMessage(SQLModel, table=True):
    __tablename__ = "ms_messages"
    __table_args__ = CLUSTERED

    run_id: str = Field(primary_key=True)
    store_id: str = Field(primary_key=True)
    seq: int = Field(primary_key=True, sa_type=SEQ)
    role: str
    content: str = Field(sa_column=Column(Text, nullable=False))
    turn: int = seq_field(default=...)


class MsArchivedThread(SQLModel, table=True):
    __tablename__ = "ms_archive_threads"
    __table_args__ = CLUSTERED

    run_id: str = Field(primary_key=True)
    store_id: str = Field(primary_key=True)
    seq: int = Field(primary_key=True, sa_type=SEQ)
    title: str = Field(sa_column=Column(Text, nullable=False))
    # JSON list of [role, content].
    messages: str = Field(sa_column=Column(Text, nullable=False))


class MsArchiveVector(SQLModel, table=True):
    """An archived thread's embedding under one model, for semantic search: derived from the thread, filled
    when a semantic search first meets it. Keyed like the thread, so a fork reads its parent's."""

    __tablename__ = "ms_archive_vectors"
    __table_args__ = CLUSTERED

    run_id: str = Field(primary_key=True)
    store_id: str = Field(primary_key=True)
    seq: int = Field(primary_key=True, sa_type=SEQ)
    model: str = Field(primary_key=True)
    # float32 values, little-endian, unit length.
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class MsCounter(SQLModel, table=True):
    """The next n for `<kind>-<n>` ids: minted once, never reused (R34)."""

    __tablename__ = "ms_counters"
    __table_args__ = CLUSTERED

    run_id: str = Field(primary_key=True)
    kind: int = Field(primary_key=True)
    next: int = seq_field()


class MsNamed(SQLModel, table=True):
    """Stores a run knows by name: `run/board`, `profile/<p>/memories`, `skills/<directory>`."""

    __tablename__ = "ms_named"
    __table_args__ = CLUSTERED

    run_id: str = Field(primary_key=True)
    key: str = Field(primary_key=True)
    store_id: str


class MsAgent(SQLModel, table=True):
    """An agent instance ModuleStore has bound."""

    __tablename__ = "ms_agents"
    __table_args__ = CLUSTERED

    run_id: str = Field(primary_key=True)
    agent_id: str = Field(primary_key=True)
    profile: str = ""
    parent_agent_id: str = ""
    cause: str = ""


class MsHandover(SQLModel, table=True):
    """An agent that handed its modules on, and to whom: at most once per agent (R36)."""

    __tablename__ = "ms_handovers"
    __table_args__ = CLUSTERED

    run_id: str = Field(primary_key=True)
    agent_id: str = Field(primary_key=True)
    successor_agent_id: str
    cause: str


class MsHolder(SQLModel, table=True):
    __tablename__ = "ms_holders"
    __table_args__ = (Index("ix_ms_holders_agent", "run_id", "agent_id"), CLUSTERED)

    run_id: str = Field(primary_key=True)
    store_id: str = Field(primary_key=True)
    agent_id: str = Field(primary_key=True)
    kind: int
    origin: int
    may_write: bool
    active: bool = True
    # The store's write count when the holder joined: its stream starts there (R13).
    watermark: int = seq_field()
    # Skills: the holder's read set (a fork copies it into a new row, a share aliases the same id).
    read_set_id: str = ""


class MsReadSet(SQLModel, table=True):
    __tablename__ = "ms_read_sets"
    __table_args__ = CLUSTERED

    id: str = Field(primary_key=True)
    # JSON list of skill names.
    names: str = Field(default="[]", sa_column=Column(Text, nullable=False))


class MsOutbox(OutboxRow, table=True):
    __tablename__ = "ms_outbox"


class MsStreamHead(StreamHeadRow, table=True):
    __tablename__ = "ms_stream_heads"
    __table_args__ = CLUSTERED


class MsOutboxPosition(OutboxPositionRow, table=True):
    """Followers' durable positions in the outbox and how far it was pruned (storage/outbox_pruning.py)."""

    __tablename__ = "ms_outbox_positions"
    __table_args__ = CLUSTERED


class MsRequest(IdempotencyRow, table=True):
    __tablename__ = "ms_requests"
    __table_args__ = CLUSTERED


class MsEndedRun(SQLModel, table=True):
    """A run Registry has ended (finished, or internal_error): its writes are refused from then on (R50)."""

    __tablename__ = "ms_ended_runs"
    __table_args__ = CLUSTERED

    run_id: str = Field(primary_key=True)
    status: str
    ended_us: int = seq_field(default=...)


TABLES = [
    m.__table__  # type: ignore[union-attr]
    for m in (
        MsStore,
        MsMessage,
        MsArchivedThread,
        MsArchiveVector,
        MsCounter,
        MsNamed,
        MsAgent,
        MsHandover,
        MsEndedRun,
        MsHolder,
        MsReadSet,
        MsOutbox,
        MsStreamHead,
        MsRequest,
        MsOutboxPosition,
    )
]

