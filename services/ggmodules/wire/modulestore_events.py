"""The telemetry events ModuleStore appends to its outbox, in the transaction of the change they report:
built by its use cases (ggmodules.usecases.modulestore), appended by storage as they are."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2, event_pb2, module_pb2
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import Contents, HistoryContents
from ggmodules.core.modules.figures import Figures
from ggmodules.core.roster import Caps, RosterRow
from ggmodules.core.vocabulary import Cause, Origin, Outcome
from ggmodules.wire.modulestore import (
    caps_pb,
    contents_pb,
    figures_pb,
    kind_pb,
    origin_pb,
    roster_row_pb,
)
from ggmodules.wire.modulestore_fill import fill_figures, fill_history

# Kinds whose snapshots carry no contents (R44): their contents are read off the holder's stream.
NO_SNAPSHOT_CONTENTS = frozenset({Kind.HISTORY, Kind.ARCHIVE})


def write_event(
    run_id: str, agent_id: str, kind: Kind, store_id: str, op: str, figures: Figures, delta: Contents
) -> event_pb2.Event:
    """The writer's own event (R28), built in place (it is on every write's path)."""
    event = event_pb2.Event(run_id=run_id, agent_id=agent_id, kind=kind_pb(kind), store_id=store_id)
    write = event.write
    write.SetInParent()
    write.op = op
    fill_figures(write.figures, figures)
    fill_contents(write.delta, delta)
    return event


def fill_contents(target: module_pb2.ModuleContents, contents: Contents) -> None:
    """`contents_pb(contents)` written into `target`: a window's contents (an append's delta) in place."""
    if isinstance(contents, HistoryContents):
        fill_history(target.history, contents)
    else:
        target.CopyFrom(contents_pb(contents))


def snapshot_event(
    run_id: str,
    agent_id: str,
    kind: Kind,
    store_id: str,
    figures: Figures,
    contents: Contents | None,
    written_by: str,
) -> event_pb2.Event:
    """Another holder's own state after someone else wrote (R29)."""
    snap = event_pb2.SnapshotEvent(figures=figures_pb(figures), written_by=written_by)
    if contents is not None and kind not in NO_SNAPSHOT_CONTENTS:
        snap.contents.CopyFrom(contents_pb(contents))
    return event_pb2.Event(
        run_id=run_id, agent_id=agent_id, kind=kind_pb(kind), store_id=store_id, snapshot=snap
    )


def roster_event(
    run_id: str,
    agent_id: str,
    profile: str,
    parent_agent_id: str,
    cause: Cause,
    rows: list[RosterRow],
    *,
    predecessor_agent_id: str = "",
    opening_note: str = "",
) -> event_pb2.Event:
    return event_pb2.Event(
        run_id=run_id,
        agent_id=agent_id,
        roster=event_pb2.RosterEvent(
            profile=profile,
            parent_agent_id=parent_agent_id,
            predecessor_agent_id=predecessor_agent_id,
            cause=cause.word,
            instance_cause=common_pb2.InstanceCause.ValueType(cause.number),
            rows=[roster_row_pb(r) for r in rows],
            opening_note=opening_note,
        ),
    )


def drain_event(
    run_id: str, agent_id: str, kind: Kind, store_id: str, figures: Figures, successor_agent_id: str
) -> event_pb2.Event:
    """A store the outgoing agent lets go of, on its own stream, before the successor's events (R30)."""
    return event_pb2.Event(
        run_id=run_id,
        agent_id=agent_id,
        kind=kind_pb(kind),
        store_id=store_id,
        drain=event_pb2.DrainEvent(figures=figures_pb(figures), successor_agent_id=successor_agent_id),
    )


def restate_event(
    run_id: str,
    agent_id: str,
    kind: Kind,
    store_id: str,
    outcome: Outcome,
    figures: Figures,
    contents: Contents | None,
    predecessor_agent_id: str,
) -> event_pb2.Event:
    """A module the successor ends up with, re-stating itself on the successor's stream (R31)."""
    restate = event_pb2.RestateEvent(
        outcome=common_pb2.Outcome.ValueType(outcome),
        figures=figures_pb(figures),
        predecessor_agent_id=predecessor_agent_id,
    )
    if contents is not None:
        restate.contents.CopyFrom(contents_pb(contents))
    return event_pb2.Event(
        run_id=run_id, agent_id=agent_id, kind=kind_pb(kind), store_id=store_id, restate=restate
    )


def bind_event(
    run_id: str,
    agent_id: str,
    kind: Kind,
    store_id: str,
    origin: Origin,
    source_store_id: str,
    may_write: bool,
    caps: Caps,
    figures: Figures,
) -> event_pb2.Event:
    return event_pb2.Event(
        run_id=run_id,
        agent_id=agent_id,
        kind=kind_pb(kind),
        store_id=store_id,
        bind=event_pb2.BindEvent(
            origin=origin_pb(origin),
            source_store_id=source_store_id,
            may_write=may_write,
            caps=caps_pb(caps),
            figures=figures_pb(figures),
        ),
    )
