"""A transfer as its journal holds it: what was asked, how far it got, and how it ended."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ggmodules.core.vocabulary import TransferKind, TransferState


class Step(enum.IntEnum):
    """The last step journaled. PLANNED is only ever read: an earlier version journaled its plan before it
    reserved the successor; planning and reserving are one Registry call now, journaled as RESERVED."""

    ASKED = 0
    PLANNED = 1
    RESERVED = 2
    HANDED_OVER = 3
    COMPLETED = 4


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
    # The HandoverRequest to send (serialized; opaque here), without its request id.
    plan: bytes = b""
    opening_note: str = ""
    successor_agent_id: str = ""
    # ModuleStore's HandoverResponse (serialized; opaque here).
    handover: bytes = b""
    failure: str = ""
    failure_code: str = ""
    failure_reason: str = ""
    failure_metadata: dict[str, str] = field(default_factory=dict)
    completed_us: int = 0
