"""Registry's records of runs and instances, as its repository reads them back and its wire converts them."""

from __future__ import annotations

from dataclasses import dataclass

from ggmodules.core.registry.runs import RunSpec
from ggmodules.core.roster import RosterRow
from ggmodules.core.vocabulary import TRANSFER_CAUSES, Cause, RunStatus


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    spec: RunSpec
    status: RunStatus
    status_detail: str
    created_us: int
    seq: int = 0


@dataclass(frozen=True)
class InstanceRecord:
    run_id: str
    agent_id: str
    profile: str
    # The agent this instance came from: its spawner or original (open/spawn/fork), or its predecessor
    # (transition/exec).
    parent_agent_id: str
    cause: Cause
    fsm_state: str
    roster: tuple[RosterRow, ...]
    created_us: int
    seq: int = 0
    pending: bool = False
    bind_request: bytes = b""
    # Transfer successors only: the predecessor while reserved; released once a rollback dropped it.
    reserved_for: str = ""
    released: bool = False
    opening_note: str = ""
    successor_agent_id: str = ""

    @property
    def is_successor(self) -> bool:
        return self.cause in TRANSFER_CAUSES
