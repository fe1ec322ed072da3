"""Registry's tables. Every name starts with `reg_` so Registry and ModuleStore can share one database."""

from __future__ import annotations

from sqlalchemy import BigInteger, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from ggmodules.storage.columns import SEQ, seq_field
from ggmodules.storage.idempotency import IdempotencyRow
from ggmodules.storage.outbox import OutboxRow, StreamHeadRow
from ggmodules.storage.outbox_pruning import OutboxPositionRow


class RegRunRow(SQLModel, table=True):
    __tablename__ = "reg_runs"

    # Creation order; what ListRuns pages by.
    seq: int | None = Field(default=None, primary_key=True, sa_type=SEQ)
    run_id: str = Field(unique=True)
    name: str = ""
    board_enabled: bool = False
    # The launch-validated profiles and FSM, as JSON (storage/registry/codec.py); never changes.
    spec: str = Field(sa_type=Text)
    status: int
    status_detail: str = Field(default="", sa_type=Text)
    created_us: int = Field(sa_type=BigInteger)


class RegInstanceRow(SQLModel, table=True):
    """One incarnation. A row is `pending` from the moment its agent id is minted until ModuleStore has
    bound it; pending rows are invisible to Get and List and are finished by a retry of the same request."""

    __tablename__ = "reg_instances"
    __table_args__ = (
        UniqueConstraint("run_id", "agent_id", name="uq_reg_instances_agent"),
        UniqueConstraint("request_method", "request_id", name="uq_reg_instances_request"),
        # A predecessor has at most one successor, reserved or completed; a released one frees it again.
        UniqueConstraint("run_id", "reserved_for", name="uq_reg_instances_successor"),
    )

    # Creation order; what ListInstances pages by.
    seq: int | None = Field(default=None, primary_key=True, sa_type=SEQ)
    run_id: str = Field(index=True)
    agent_id: str
    profile: str
    parent_agent_id: str = ""
    cause: str
    fsm_state: str = ""
    # The roster rows as JSON; empty while pending, then never changed (R36).
    roster: str = Field(default="[]", sa_type=Text)
    pending: bool = True
    # The request that opened it (absent when the caller sent no request id).
    request_method: str | None = None
    request_id: str | None = None
    request_hash: str | None = None
    # The serialized BindInstanceRequest, re-sent unchanged by a retry so ModuleStore applies it once.
    bind_request: bytes | None = Field(default=None, sa_type=LargeBinary)
    created_us: int = Field(sa_type=BigInteger)
    # Transfer successors (cause "transition" or "exec"): the predecessor this row succeeds, while the
    # reservation holds (NULL once released); `released` marks a reservation dropped by a rollback, kept so
    # a late CompleteSuccessor is refused rather than answered "not found".
    reserved_for: str | None = None
    released: bool = False
    opening_note: str = Field(default="", sa_type=Text)
    # Set on a predecessor once its successor is complete.
    successor_agent_id: str = ""


class RegAgentCounterRow(SQLModel, table=True):
    """The next n of `<profile>-<n>` per run: minted once, never reused."""

    __tablename__ = "reg_agent_counters"

    run_id: str = Field(primary_key=True)
    profile: str = Field(primary_key=True)
    next_n: int = seq_field()


class RegOutboxRow(OutboxRow, table=True):
    __tablename__ = "reg_outbox"


class RegStreamHeadRow(StreamHeadRow, table=True):
    __tablename__ = "reg_stream_heads"


class RegOutboxPositionRow(OutboxPositionRow, table=True):
    """Followers' durable positions in the outbox and how far it was pruned (storage/outbox_pruning.py)."""

    __tablename__ = "reg_outbox_positions"


class RegRequestRow(IdempotencyRow, table=True):
    __tablename__ = "reg_requests"


TABLES = [
    RegRunRow.__table__,  # type: ignore[attr-defined]
    RegInstanceRow.__table__,  # type: ignore[attr-defined]
    RegAgentCounterRow.__table__,  # type: ignore[attr-defined]
    RegOutboxRow.__table__,  # type: ignore[attr-defined]
    RegStreamHeadRow.__table__,  # type: ignore[attr-defined]
    RegRequestRow.__table__,  # type: ignore[attr-defined]
    RegOutboxPositionRow.__table__,  # type: ignore[attr-defined]
]
