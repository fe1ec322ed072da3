"""Transfer's journal. Every name starts with `tr_` so it can share one database with the other services."""

from __future__ import annotations

from sqlalchemy import BigInteger, LargeBinary, Text
from sqlmodel import Field, SQLModel

from ggmodules.storage.columns import SEQ


class TrTransferRow(SQLModel, table=True):
    """One transfer, from the moment it is asked for until it completed or failed. The unique request id is
    the idempotency key (R27): a retry finds this row and gets its answer, or resumes it."""

    __tablename__ = "tr_transfers"

    seq: int | None = Field(default=None, primary_key=True, sa_type=SEQ)
    transfer_id: str = Field(unique=True)
    # Absent when the caller sent no request id (the call is then not idempotent).
    request_id: str | None = Field(default=None, unique=True)
    request_hash: str = ""
    run_id: str = Field(index=True)
    kind: int
    predecessor_agent_id: str
    # Transition: the edge (to_state as asked); exec: the profile as asked.
    from_state: str = ""
    to_state: str = ""
    successor_profile: str = ""
    successor_fsm_state: str = ""
    # Exec: the successor runs outside the FSM (ExecRequest.leave_fsm).
    leave_fsm: bool = False
    # TransferState: pending, completed, failed.
    state: int = Field(index=True)
    # The last step journaled: 0 asked, 1 planned, 2 reserved, 3 handed over, 4 completed.
    step: int = 0
    # Step 1: the HandoverRequest to send, without its successor (serialized, deterministic).
    plan: bytes | None = Field(default=None, sa_type=LargeBinary)
    opening_note: str = Field(default="", sa_type=Text)
    # Step 2.
    successor_agent_id: str = ""
    # Step 3: ModuleStore's HandoverResponse (roster and outcomes).
    handover: bytes | None = Field(default=None, sa_type=LargeBinary)
    # Failed: the refusal the caller got (and gets again on a retry).
    failure: str = Field(default="", sa_type=Text)
    failure_code: str = ""
    failure_reason: str = ""
    failure_metadata: str = Field(default="{}", sa_type=Text)
    # The replica driving it while pending, and until when (microseconds on the database's clock); a scan
    # takes over an expired lease, so a dead replica's transfer finishes without any client retry.
    lease_owner: str = ""
    lease_expires_us: int = Field(default=0, sa_type=BigInteger)
    created_us: int = Field(sa_type=BigInteger)
    # When it completed or failed (0 while pending): pruned by it past the retention window (prune_ended).
    completed_us: int = Field(default=0, sa_type=BigInteger, index=True)


TABLES = [TrTransferRow.__table__]  # type: ignore[attr-defined]
