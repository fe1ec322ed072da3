"""Plans for the Telemetry RPCs a runtime or a front end makes: turn reports and the console's views.

The views come back as the contract's own typed messages (`ggmodules.telemetry.v1.telemetry_pb2`), the
same a console renders; `subscribe` (a stream) lives in `ggmodules.sdk.stream`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ggmodules.sdk import encode
from ggmodules.sdk.plans import Plan, mutation, read
from ggmodules.sdk.results import Instance
from ggmodules.sdk.words import Kind
from ggmodules.telemetry.v1 import telemetry_pb2
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb

# A module's tokens: by kind, or (kind, store_id, tokens) to name the store too.
TokensInput = Mapping[Kind | str, int] | Iterable[tuple[Kind | str, str, int]]


def _modules(modules: TokensInput) -> list[telemetry_pb2.ModuleTokens]:
    rows = ([(k, "", n) for k, n in modules.items()] if isinstance(modules, Mapping) else list(modules))
    return [telemetry_pb2.ModuleTokens(kind=encode.kind(k), store_id=store_id, tokens=tokens)
            for k, store_id, tokens in rows]


def report_turn(run_id: str, agent_id: str, turn: int, modules: TokensInput) -> Plan[int]:
    """Reports the tokens each module took in the agent's window on `turn` (R43); returns the report's
    cursor. Turns go forward: the same turn again is `TurnAlreadyReportedError`, a lower one
    `TurnOutOfOrderError`; a figure for the archive `CostNoneByConstructionError`. Retries (by gRPC, on
    UNAVAILABLE) reuse the request id, so a report is recorded once."""
    request = pb.ReportTurnRequest(run_id=run_id, agent_id=agent_id, turn=turn, modules=_modules(modules))
    return mutation("telemetry", "ReportTurn", request, lambda resp: int(resp.cursor))


def agent_report_turn(agent: Instance, turn: int, modules: Mapping[Kind | str, int]) -> Plan[int]:
    """Reports this agent's window on `turn`: tokens per kind, each on the store its roster names."""
    rows = [(k, agent.row(k).store_id, n) for k, n in modules.items()]
    return report_turn(agent.run_id, agent.agent_id, turn, rows)


def inspect_instances(run_id: str) -> Plan[pb.InspectInstancesResponse]:
    """The Instances view (R37 to R41): a folder per instance, and whether the run has a Modules view."""
    return read("telemetry", "InspectInstances", pb.InspectInstancesRequest(run_id=run_id), lambda r: r)


def inspect_modules(run_id: str) -> Plan[pb.InspectModulesResponse]:
    """The Modules view (R42, R43): per kind, its stores and measured costs."""
    return read("telemetry", "InspectModules", pb.InspectModulesRequest(run_id=run_id), lambda r: r)


def inspect_agents(run_id: str) -> Plan[pb.InspectAgentsResponse]:
    """The Agents view (R45, R46): per profile, its instances and their successions."""
    return read("telemetry", "InspectAgents", pb.InspectAgentsRequest(run_id=run_id), lambda r: r)


def get_store_detail(run_id: str, store_id: str) -> Plan[telemetry_pb2.StoreDetail]:
    """One store's five-section detail (R44)."""
    return read("telemetry", "GetStoreDetail", pb.GetStoreDetailRequest(run_id=run_id, store_id=store_id),
                lambda r: r.detail)
