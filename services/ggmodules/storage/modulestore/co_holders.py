"""What a write tells the store's other holders (R29), built as one record (storage/fan_out.py): every other
active holder re-emits its own state on its own stream; a read-set change concerns only the holders aliasing
that read set. The snapshot is built once per distinct content: once for every kind but skills, whose
holders each see their own read set (once per read set)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ggmodules.common.v1 import event_pb2
from ggmodules.core.kinds import Kind
from ggmodules.core.modules import skills
from ggmodules.core.modules.contents import SkillsContents
from ggmodules.core.modules.ops import Op, ReadSkill
from ggmodules.core.modules.store import Applied
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.modulestore import read_sets
from ggmodules.storage.modulestore.events import snapshot_event
from ggmodules.storage.modulestore.prepared import Tx


class Holder(Protocol):
    """A holder row of the written store, as the write loaded it."""

    @property
    def agent_id(self) -> str | None: ...
    @property
    def active(self) -> bool | None: ...
    @property
    def read_set_id(self) -> str | None: ...


def fan_out(
    tx: Tx,
    holders: Sequence[Holder],
    written: event_pb2.Event,
    op: Op,
    applied: Applied,
    writer_read_set: str,
) -> event_pb2.Event | FanOutEntry:
    """The writer's event `written` alone when no other holder is told, else one record standing for it
    and every other holder's snapshot, in the holders' order."""
    writer = written.agent_id
    others = [h for h in holders if h.agent_id is not None and h.agent_id != writer and h.active]
    if isinstance(op, ReadSkill):
        others = [h for h in others if h.read_set_id == writer_read_set]
    if not others:
        return written
    run_id, store_id = written.run_id, written.store_id
    kind, figures = applied.head.kind, applied.head.figures
    delta = applied.delta
    if not isinstance(delta, SkillsContents):
        snapshot = snapshot_event(run_id, "", kind, store_id, figures, delta, writer)
        return FanOutEntry(written, [snapshot], [(h.agent_id or "", 0) for h in others])
    assert kind == Kind.SKILLS
    sets = read_sets.load_many(tx, (h.read_set_id or "" for h in others))
    index: dict[str, int] = {}
    snapshots: list[event_pb2.Event] = []
    told: list[tuple[str, int]] = []
    for h in others:
        theirs = h.read_set_id or ""
        if theirs not in index:
            names = sets.get(theirs, ())
            contents = SkillsContents(delta.directory, delta.catalogue, names)
            held = skills.holder_figures(figures, names)
            index[theirs] = len(snapshots)
            snapshots.append(snapshot_event(run_id, "", kind, store_id, held, contents, writer))
        told.append((h.agent_id or "", index[theirs]))
    return FanOutEntry(written, snapshots, told)
