"""What several Telemetry test modules do: report a turn, read a run's stream up to a marker."""

from __future__ import annotations

from ggmodules.common.v1 import event_pb2
from ggmodules.telemetry.v1 import telemetry_pb2
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from tests.harness import Suite, is_write_of

Tokens = tuple[int, str, int]


def report(suite: Suite, run: str, agent: str, turn: int, *modules: Tokens, request_id: str = "") -> int:
    request = tel.ReportTurnRequest(
        request_id=request_id, run_id=run, agent_id=agent, turn=turn,
        modules=[telemetry_pb2.ModuleTokens(kind=k, store_id=s, tokens=t) for k, s, t in modules],
    )
    return int(suite.tel.ReportTurn(request).cursor)


def key(ev: event_pb2.Event) -> tuple[str, int]:
    return ev.origin, ev.origin_seq


def read_run(
    suite: Suite,
    run: str,
    marker: str,
    seen: list[tuple[int, event_pb2.Event]] = (),  # type: ignore[assignment]
) -> list[tuple[int, event_pb2.Event]]:
    """`seen`, then the run's stream after it up to `marker` and until Registry's `created` is in (it comes
    from another origin, so anywhere in between)."""
    sub = suite.subscribe(run, after=seen[-1][0] if seen else 0)
    got = list(seen) + sub.until(is_write_of(marker))
    while not any(ev.origin == "registry" for _, ev in got):
        got.append(sub.next_event())
    sub.close()
    return got
