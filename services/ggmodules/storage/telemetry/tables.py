"""Telemetry's tables. Every name starts with `tel_` so Telemetry can share a database with the others."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Column, Index, Integer, Text
from sqlmodel import Field, SQLModel

from ggmodules.storage.idempotency import IdempotencyRow
from ggmodules.storage.outbox import OutboxRow, StreamHeadRow


class TelEventRow(SQLModel, table=True):
    """Telemetry's log: every event of every origin, stored once, in the order Telemetry stored it."""

    __tablename__ = "tel_events"
    __table_args__: Any = (
        # A run's events in cursor order; an agent's among them are read off the index. No unique key on
        # (origin, origin_seq): ingestion passes over what its origin's position says is stored (issue 14).
        Index("ix_tel_events_run_cursor", "run_id", "cursor", "agent_id"),
        # Never reuse a cursor, even after the newest rows were pruned.
        {"sqlite_autoincrement": True},
    )

    cursor: int | None = Field(
        default=None,
        sa_column=Column(
            BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
    )
    origin: str
    origin_seq: int = Field(sa_type=BigInteger)
    run_id: str
    agent_id: str
    # A serialized ggmodules.common.v1.Event, origin_seq included.
    payload: bytes
    # When Telemetry stored it (Unix seconds): retention by age prunes the oldest past the window.
    stored_at: int = Field(default=0, sa_type=BigInteger)


class TelEventBlockRow(SQLModel, table=True):
    """Telemetry's older events, packed BLOCK at a time and compressed (storage/telemetry/event_blocks.py):
    the cursors first_cursor..last_cursor (not every one need be there), older than any row of tel_events."""

    __tablename__ = "tel_event_blocks"

    first_cursor: int = Field(
        sa_column=Column(
            BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=False
        )
    )
    last_cursor: int = Field(sa_type=BigInteger)
    events: int
    # The sum of its events' stored payload sizes (uncompressed): what retention by bytes counts.
    payload_bytes: int = Field(sa_type=BigInteger)
    # The run of every event in the block; None when it holds several runs' events.
    run_id: str | None = Field(default=None, nullable=True)
    payload: bytes


class TelMetaRow(SQLModel, table=True):
    """Counters that outlive pruning: `pruned_through`, and `origin/<name>` (highest origin_seq stored)."""

    __tablename__ = "tel_meta"

    key: str = Field(primary_key=True)
    value: int = Field(default=0, sa_type=BigInteger)


class TelAgentRow(SQLModel, table=True):
    """Every agent Telemetry knows: from its roster event as ingested, or confirmed with the Registry by
    ReportTurn ahead of ingestion. Outlives pruning, so turn reports are checked against it (R43)."""

    __tablename__ = "tel_agents"

    run_id: str = Field(primary_key=True)
    agent_id: str = Field(primary_key=True)
    # JSON object: kind word -> store id, for each kind the roster has on.
    held: str = Field(default="{}", sa_type=Text)
    # The last turn the agent reported (None: none yet), and where that report is on the log.
    last_turn: int | None = Field(default=None, sa_type=BigInteger)
    last_cursor: int = Field(default=0, sa_type=BigInteger)


class TelOutboxRow(OutboxRow, table=True):
    """Telemetry's own events (ReportTurn): minted here with origin "telemetry", then logged."""

    __tablename__ = "tel_outbox"


class TelStreamHeadRow(StreamHeadRow, table=True):
    __tablename__ = "tel_stream_heads"


class TelRequestRow(IdempotencyRow, table=True):
    __tablename__ = "tel_requests"


TABLES = [
    TelEventRow.__table__,  # type: ignore[attr-defined]
    TelEventBlockRow.__table__,  # type: ignore[attr-defined]
    TelMetaRow.__table__,  # type: ignore[attr-defined]
    TelAgentRow.__table__,  # type: ignore[attr-defined]
    TelOutboxRow.__table__,  # type: ignore[attr-defined]
    TelStreamHeadRow.__table__,  # type: ignore[attr-defined]
    TelRequestRow.__table__,  # type: ignore[attr-defined]
]
