"""Conversion between Telemetry's protobuf messages and its domain and storage types."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2, event_pb2
from ggmodules.core.telemetry.turns import TurnReport, validate_turn
from ggmodules.storage.telemetry import StoredEvent
from ggmodules.telemetry.v1 import telemetry_pb2
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb


def stream_event(stored: StoredEvent) -> pb.SubscribeResponse:
    return pb.SubscribeResponse(event=telemetry_pb2.StreamEvent(cursor=stored.cursor, event=stored.event))


def stream_event_bytes(stored: StoredEvent) -> bytes:
    """`stream_event` serialized, once per stored event: every subscriber it reaches sends these bytes."""
    if stored.wire is not None:
        return stored.wire
    return stored.keep_wire(stream_event(stored).SerializeToString())


def heartbeat(head_cursor: int) -> pb.SubscribeResponse:
    return pb.SubscribeResponse(heartbeat=telemetry_pb2.Heartbeat(head_cursor=head_cursor))


def turn_report(request: pb.ReportTurnRequest) -> TurnReport:
    return validate_turn(
        request.run_id,
        request.agent_id,
        request.turn,
        [(int(m.kind), m.store_id, m.tokens) for m in request.modules],
    )


def turn_event(report: TurnReport) -> event_pb2.Event:
    """The breakdown as an event on the reporting agent's stream."""
    return event_pb2.Event(
        run_id=report.run_id,
        agent_id=report.agent_id,
        turn=event_pb2.TurnEvent(
            turn=report.turn,
            modules=[
                event_pb2.TurnModule(
                    kind=common_pb2.Kind.ValueType(m.kind), store_id=m.store_id, tokens=m.tokens
                )
                for m in report.modules
            ],
        ),
    )
