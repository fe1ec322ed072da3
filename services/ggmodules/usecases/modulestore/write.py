"""Write: who may write, the write applied, and the events it makes (R28, R29), in the caller's transaction.

The writer must hold the store, actively (not let go of, not handed on), and may write there (not
read-only). The writer's stream gets the write event (R28); every other active holder gets a snapshot of
its own state on its own stream (R29), a read-set change only the holders aliasing that read set; all of
them stored as one outbox row (storage/fan_out.py).
"""

from __future__ import annotations

from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import FailedPrecondition, PermissionDenied, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules import skills
from ggmodules.core.modules.caps import DEFAULT_LIMITS, StoreLimits
from ggmodules.core.modules.contents import SkillsContents
from ggmodules.core.modules.handover import handed_on
from ggmodules.core.modules.ops import LOG_OPS, OP_NAME, Op, ReadSkill
from ggmodules.core.modules.states import KindState
from ggmodules.core.modules.store import Applied
from ggmodules.core.modules.views import WriteResult
from ggmodules.core.modules.write import apply_write
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.usecases.modulestore.port import StoreHolders, WriteUnit
from ggmodules.wire.modulestore_events import snapshot_event, write_event


def write(
    unit: WriteUnit,
    run_id: str,
    agent_id: str,
    store_id: str,
    op: Op,
    limits: StoreLimits = DEFAULT_LIMITS,
) -> WriteResult:
    """The one write entry point (Write, CallTool, Session): applies `op` by `agent_id` to `store_id`."""
    held = unit.holders(run_id, store_id, agent_id)
    if held is None:
        raise unit.missing(run_id, agent_id, store_id)
    if held.run_ended:  # ended through any replica, read in this transaction (R50)
        raise run_has_ended(run_id, held.run_ended)
    _check_writer(unit, held, run_id, agent_id, store_id)
    head = held.head()
    state: KindState = None
    if type(op) not in LOG_OPS:
        state = unit.state(run_id, store_id, head.kind)
    read_set_id = held.read_set_id or ""
    read_set = unit.read_set(read_set_id) if head.kind == Kind.SKILLS else ()

    applied = apply_write(head, op, state, agent_id, read_set, limits)
    unit.persist(run_id, store_id, read_set_id, applied)

    new = applied.head
    figures = new.figures
    if head.kind == Kind.SKILLS:
        figures = skills.holder_figures(figures, read_set if applied.read_set is None else applied.read_set)
    written = write_event(run_id, agent_id, head.kind, store_id, OP_NAME[type(op)], figures, applied.delta)
    unit.append([_fan_out(unit, held, written, op, applied, read_set_id)])
    return WriteResult(
        store_id,
        figures,
        task_id=applied.task_id,
        issue_id=applied.issue_id,
        thread_id=applied.thread_id,
        last_seq=new.head_seq if head.kind == Kind.HISTORY else 0,
        turn=new.turn,
    )


def run_has_ended(run_id: str, status: str) -> FailedPrecondition:
    """The refusal of a write to a run Registry has ended (EndRun), whatever credential it carries (R50)."""
    return FailedPrecondition(
        f"run {run_id} has ended ({status}); it takes no more writes",
        reason=Reason.RUN_NOT_RUNNING,
        metadata={"run_id": run_id, "status": status},
    )


def _check_writer(unit: WriteUnit, held: StoreHolders, run_id: str, agent_id: str, store_id: str) -> None:
    if not held.holds or not held.active:
        error = unit.missing(run_id, agent_id, store_id)
        if error.reason in (Reason.RUN_NOT_FOUND, Reason.AGENT_NOT_FOUND):
            raise error
        successor = unit.successor_of(run_id, agent_id)
        if successor is not None:
            raise handed_on(agent_id, successor)
        raise unit.not_a_holder(run_id, agent_id, store_id, let_go=held.holds)
    if not held.may_write:
        raise PermissionDenied(
            f"agent {agent_id!r} holds {store_id!r} read-only; its profile does not let it write there",
            reason=Reason.READ_ONLY,
            metadata={"agent_id": agent_id, "store_id": store_id},
        )


def _fan_out(
    unit: WriteUnit,
    held: StoreHolders,
    written: event_pb2.Event,
    op: Op,
    applied: Applied,
    writer_read_set: str,
) -> event_pb2.Event | FanOutEntry:
    """What the store's other holders are told (R29): the writer's event `written` alone when no other
    holder is, else one record (storage/fan_out.py) standing for it and every other holder's snapshot, in
    the holders' order. Every other active holder re-emits its own state on its own stream; a read-set
    change concerns only the holders aliasing that read set. The snapshot is built once per distinct
    content: once for every kind but skills, whose holders each see their own read set (once per read
    set)."""
    others = held.others()  # every other active holder
    if isinstance(op, ReadSkill):
        theirs = held.others_read_sets()
        others = [h for h, r in zip(others, theirs, strict=True) if r == writer_read_set]
    if not others:
        return written
    run_id, store_id, writer = written.run_id, written.store_id, written.agent_id
    kind, figures = applied.head.kind, applied.head.figures
    delta = applied.delta
    if not isinstance(delta, SkillsContents):
        snapshot = snapshot_event(run_id, "", kind, store_id, figures, delta, writer)
        return FanOutEntry(written, [snapshot], agent_ids=others)
    assert kind == Kind.SKILLS
    read_set_of = dict(zip(held.others(), held.others_read_sets(), strict=True))
    sets = unit.read_sets(read_set_of[h] for h in others)
    index: dict[str, int] = {}
    snapshots: list[event_pb2.Event] = []
    told: list[tuple[str, int]] = []
    for h in others:
        theirs = read_set_of[h]
        if theirs not in index:
            names = sets.get(theirs, ())
            contents = SkillsContents(delta.directory, delta.catalogue, names)
            shown = skills.holder_figures(figures, names)
            index[theirs] = len(snapshots)
            snapshots.append(snapshot_event(run_id, "", kind, store_id, shown, contents, writer))
        told.append((h, index[theirs]))
    return FanOutEntry(written, snapshots, told)
