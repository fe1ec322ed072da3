"""The credentials a client holds (R50), and which one each call carries.

A client starts with an operator credential (`ClientConfig.operator_credential`, by default the one
`ggmodules up` wrote to ./var/auth/operator.jwt). Every answer that mints something hands its credential
over and the wallet keeps it: CreateRun the run's operator credential, OpenInstance, SpawnSubagent and
ForkInstance the new agent's, Transition and Exec the successor's. A call made as an agent (its request
names the acting agent) carries that agent's credential; any other call carries the operator credential,
else the run's. It travels as `authorization: Bearer <credential>` metadata.
"""

from __future__ import annotations

import threading
from typing import Any

AUTHORIZATION = "authorization"
# The request field naming the acting agent, per method (the services check it against the credential).
ACTING_FIELD = {
    "Write": "agent_id",
    "CallTool": "agent_id",
    "RenderPrompt": "agent_id",
    "SearchArchive": "agent_id",
    "GetStore": "agent_id",
    "ForkInstance": "agent_id",
    "SpawnSubagent": "parent_agent_id",
    "Transition": "agent_id",
    "Exec": "agent_id",
    "ReportTurn": "agent_id",
}


def bearer(credential: str) -> tuple[tuple[str, str], ...]:
    return ((AUTHORIZATION, f"Bearer {credential}"),) if credential else ()


class Wallet:
    def __init__(self, operator: str = "") -> None:
        self.operator = operator
        self._agents: dict[tuple[str, str], str] = {}
        self._runs: dict[str, str] = {}
        self._lock = threading.Lock()

    def agent(self, run_id: str, agent_id: str) -> str:
        """The credential held for an agent ("" if none)."""
        return self._agents.get((run_id, agent_id), "")

    def run(self, run_id: str) -> str:
        """The run's operator credential from its CreateRun answer ("" if none)."""
        return self._runs.get(run_id, "")

    def add_agent(self, run_id: str, agent_id: str, credential: str) -> None:
        if credential:
            with self._lock:
                self._agents[(run_id, agent_id)] = credential

    def pick(self, method: str, request: Any) -> str:
        """The credential a call carries: the acting agent's, else the operator's, else the run's."""
        run_id = str(getattr(request, "run_id", ""))
        field = ACTING_FIELD.get(method)
        if field:
            found = self.agent(run_id, str(getattr(request, field, "")))
            if found:
                return found
        return self.operator or self.run(run_id)

    def learn(self, method: str, response: Any) -> None:
        """Keeps the credential an answer carries."""
        if method == "CreateRun" and response.operator_credential:
            with self._lock:
                self._runs[response.run.run_id] = response.operator_credential
        elif method in ("OpenInstance", "SpawnSubagent", "ForkInstance"):
            self.add_agent(response.instance.run_id, response.instance.agent_id, response.credential)
        elif method in ("Transition", "Exec"):
            transfer = response.transfer
            self.add_agent(transfer.run_id, transfer.successor_agent_id, response.successor_credential)
