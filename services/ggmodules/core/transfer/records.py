"""A transfer's journal entry, as Transfer's repository reads it back and its wire converts it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ggmodules.core.transfer.vocabulary import TransferKind, TransferState


@dataclass(frozen=True)
class TransferRecord:
    transfer_id: str
    request_id: str
    request_hash: str
    run_id: str
    kind: TransferKind
    predecessor_agent_id: str
    state: TransferState
    step: int
    created_us: int
    from_state: str = ""
    to_state: str = ""
    successor_profile: str = ""
    successor_fsm_state: str = ""
    leave_fsm: bool = False
    plan: bytes = b""
    opening_note: str = ""
    successor_agent_id: str = ""
    handover: bytes = b""
    failure: str = ""
    failure_code: str = ""
    failure_reason: str = ""
    failure_metadata: dict[str, str] = field(default_factory=dict)
    completed_us: int = 0
