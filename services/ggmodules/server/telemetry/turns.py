"""ReportTurn: a runtime's per-turn context breakdown, checked against the agent it names (R43, R47).

Telemetry knows an agent from its roster event, but only once that event has been ingested from
ModuleStore's outbox, which lags the OpenInstance that bound it (and lags a lot while Telemetry catches up
after an outage). A runtime reports its first turn right after opening the agent, so an agent Telemetry
does not know yet is asked of the Registry, the authority on which agents exist: an instance it shows is
accepted at once, checked against the roster it shows, and remembered; one it does not know is refused
NOT_FOUND (AGENT_NOT_FOUND or RUN_NOT_FOUND). If the Registry cannot be reached the report is refused
UNAVAILABLE, nothing recorded, and a retry with the same request id is safe. Nothing waits on ingestion.
"""

from __future__ import annotations

import asyncio

import structlog

from ggmodules.core.errors import NotFound
from ggmodules.core.telemetry.turns import KnownAgent, TurnReport, admit_turn, held_of
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.registry.v1 import registry_service_pb2_grpc
from ggmodules.runtime.dependency import Dependency
from ggmodules.runtime.security import INSECURE, Security
from ggmodules.storage.idempotency import RequestKey
from ggmodules.storage.telemetry import TelemetryRepository
from ggmodules.storage.telemetry.eventlog import EventLog
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.wire.telemetry import turn_event, turn_report

_UNREACHABLE = (
    "Telemetry has not ingested this agent's roster yet and could not confirm the agent with it; nothing "
    "was recorded. Retry with the same request_id"
)


class TurnReports:
    def __init__(
        self,
        repo: TelemetryRepository,
        registry_address: str,
        log: structlog.typing.FilteringBoundLogger,
        event_log: EventLog | None = None,
        security: Security = INSECURE,
    ) -> None:
        self._repo = repo
        self._event_log = event_log
        self._registry = Dependency(
            "Registry", registry_address, registry_service_pb2_grpc.RegistryServiceStub, log, _UNREACHABLE,
            security=security,
        )

    async def report(self, request: pb.ReportTurnRequest) -> pb.ReportTurnResponse:
        report = turn_report(request)
        event = turn_event(report)
        request_key = RequestKey.of("ReportTurn", request)
        key = None if request_key is None else (
            request_key.method, request_key.request_id, request_key.request_hash
        )
        known = await asyncio.to_thread(self._repo.agent, report.run_id, report.agent_id)
        confirmed = known or await self._confirm(report)

        def admit(stored: KnownAgent | None) -> KnownAgent:
            agent = stored or confirmed
            admit_turn(report, agent)
            return agent

        def answer(cursor: int) -> bytes:
            return pb.ReportTurnResponse(cursor=cursor).SerializeToString(deterministic=True)

        publish = self._event_log.turn_publisher() if self._event_log is not None else None
        raw = await asyncio.to_thread(self._repo.report, event, key, answer, admit, publish)
        return pb.ReportTurnResponse.FromString(raw)

    async def _confirm(self, report: TurnReport) -> KnownAgent:
        """The agent as the Registry shows it, for one whose roster Telemetry has not ingested."""
        request = reg.GetInstanceRequest(run_id=report.run_id, agent_id=report.agent_id)
        try:
            found: reg.GetInstanceResponse = await self._registry.call("GetInstance", request)
        except NotFound as err:
            raise NotFound(
                f"ReportTurn: neither Telemetry's log nor the Registry knows agent {report.agent_id!r} in "
                f"run {report.run_id!r} ({err.message}); report turns for agents opened through the Registry",
                reason=err.reason,
                metadata={"run_id": report.run_id, "agent_id": report.agent_id},
            ) from None
        rows = found.instance.roster
        return KnownAgent(
            report.run_id, report.agent_id, held_of((r.kind, r.store_id, r.enabled) for r in rows)
        )

    async def close(self) -> None:
        await self._registry.close()
