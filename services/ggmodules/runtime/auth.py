"""Who may call what (R50): every RPC mapped to the roles it admits, checked before its handler runs.

`Guard.admit` runs inside the call interceptor (runtime/interceptors.py), before the handler and before any
SQL, so its refusals take the same path to a status as every other refusal:
- no `authorization: Bearer <credential>` metadata, or a credential that is malformed, altered or expired:
  UNAUTHENTICATED with CREDENTIAL_MISSING / CREDENTIAL_MALFORMED / CREDENTIAL_INVALID / CREDENTIAL_EXPIRED;
- a role the RPC does not admit: PERMISSION_DENIED ROLE_NOT_PERMITTED (`role`, `allowed` in the metadata);
- a run-scoped credential naming another run: PERMISSION_DENIED WRONG_RUN;
- an agent credential whose request names another acting agent: PERMISSION_DENIED AGENT_MISMATCH.
A client stream (ModuleStore's write Session) is admitted in two steps: its credential and role when it
opens (`open`: a refusal ends the stream), then each message's run and acting agent (`check_message`: a
refusal answers that message alone).
An RPC missing from the table is refused to everybody (a new RPC is closed until it is given a rule).

The verified principal is kept in a context variable for the handler (`current_principal()`): Registry
scopes what it lists by it. What the table cannot see is checked where the state is: ModuleStore refuses a
handed-on agent's writes (HANDED_ON) and every write of a run Registry has ended (RUN_NOT_RUNNING).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ggmodules.core.errors import PermissionDenied, Reason, Unauthenticated, missing
from ggmodules.runtime.credentials import Principal, Role, Verifier

AUTHORIZATION = "authorization"
AGENT = frozenset({Role.AGENT})
SERVICE = frozenset({Role.SERVICE})
WATCHERS = frozenset({Role.OPERATOR, Role.OBSERVER})
READERS = frozenset({Role.AGENT, Role.OPERATOR, Role.OBSERVER, Role.SERVICE})
OPERATOR = frozenset({Role.OPERATOR})

_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar("principal", default=None)


def current_principal() -> Principal | None:
    """The verified caller of the call being handled; None when the suite runs without auth."""
    return _principal.get()


@dataclass(frozen=True, slots=True)
class Rule:
    roles: frozenset[Role]
    # The request field naming the acting agent: an agent credential must be that agent's.
    agent_field: str = ""
    # The request field naming the run ("" for RPCs about no run). Empty in a request: every run, which
    # only a credential for every run may ask (`unscoped_ok`: the answer is filtered to the caller's run).
    run_field: str = "run_id"
    unscoped_ok: bool = False
    # Only a credential for every run (an operator's from `ggmodules up`): making a new run.
    every_run_only: bool = False


_MS = "/ggmodules.modulestore.v1.ModuleStoreService/"
_REG = "/ggmodules.registry.v1.RegistryService/"
_TR = "/ggmodules.transfer.v1.TransferService/"
_TEL = "/ggmodules.telemetry.v1.TelemetryService/"
_MS_IN = "/ggmodules.internal.v1.ModuleStoreInternalService/"
_REG_IN = "/ggmodules.internal.v1.RegistryInternalService/"
_OUTBOX = "/ggmodules.internal.v1.OutboxService/"

RULES: Mapping[str, Rule] = {
    # Registry: runs are an operator's; instances are opened by an operator, spawned and forked by an agent
    # (as itself) or by the run's operator.
    _REG + "CreateRun": Rule(OPERATOR, run_field="", every_run_only=True),
    _REG + "GetRun": Rule(READERS),
    _REG + "ListRuns": Rule(READERS - SERVICE, run_field="", unscoped_ok=True),
    _REG + "FinishRun": Rule(OPERATOR),
    _REG + "OpenInstance": Rule(OPERATOR),
    _REG + "SpawnSubagent": Rule(AGENT | OPERATOR, agent_field="parent_agent_id"),
    _REG + "ForkInstance": Rule(AGENT | OPERATOR, agent_field="agent_id"),
    _REG + "GetInstance": Rule(READERS),
    _REG + "ListInstances": Rule(READERS),
    # ModuleStore: an agent writes, reads its prompt and calls tools as itself; reads are open to the run.
    _MS + "Write": Rule(AGENT, agent_field="agent_id"),
    # A write session: the credential is checked at open, and every message against it (its write's run and
    # acting agent).
    _MS + "Session": Rule(AGENT, agent_field="write.agent_id", run_field="write.run_id"),
    _MS + "CallTool": Rule(AGENT, agent_field="agent_id"),
    _MS + "RenderPrompt": Rule(AGENT, agent_field="agent_id"),
    _MS + "SearchArchive": Rule(AGENT, agent_field="agent_id"),
    _MS + "GetStore": Rule(READERS - SERVICE, agent_field="agent_id"),
    _MS + "ListStores": Rule(READERS - SERVICE),
    _MS + "ListTools": Rule(READERS, run_field=""),
    # Transfer: an agent hands itself on; a transfer is read back by its run.
    _TR + "Transition": Rule(AGENT, agent_field="agent_id"),
    _TR + "Exec": Rule(AGENT, agent_field="agent_id"),
    _TR + "GetTransfer": Rule(READERS - SERVICE),
    # Telemetry: streams and views of one run for its operator, observer and agents; every run: operator.
    _TEL + "Subscribe": Rule(READERS - SERVICE, unscoped_ok=False),
    _TEL + "ReportTurn": Rule(AGENT, agent_field="agent_id"),
    _TEL + "InspectInstances": Rule(READERS - SERVICE),
    _TEL + "InspectModules": Rule(READERS - SERVICE),
    _TEL + "InspectAgents": Rule(READERS - SERVICE),
    _TEL + "GetStoreDetail": Rule(READERS - SERVICE),
    # The internal surface: the services' calls to each other.
    _MS_IN + "BindInstance": Rule(SERVICE, run_field=""),
    _MS_IN + "Handover": Rule(SERVICE, run_field=""),
    _MS_IN + "ReadOutbox": Rule(SERVICE, run_field=""),
    _MS_IN + "EndRun": Rule(SERVICE, run_field=""),
    _REG_IN + "PlanSuccessor": Rule(SERVICE, run_field=""),
    _REG_IN + "ReserveSuccessor": Rule(SERVICE, run_field=""),
    _REG_IN + "CompleteSuccessor": Rule(SERVICE, run_field=""),
    _REG_IN + "ReleaseSuccessor": Rule(SERVICE, run_field=""),
    _REG_IN + "FailRun": Rule(SERVICE, run_field=""),
    _OUTBOX + "WatchOutbox": Rule(SERVICE, run_field=""),
    _OUTBOX + "AckOutbox": Rule(SERVICE, run_field=""),
}

_NOBODY = Rule(frozenset())


def _names(roles: frozenset[Role]) -> str:
    return ", ".join(sorted(r.value for r in roles)) or "none"


class Guard:
    """Verifies the call's credential and checks it against the RPC's rule."""

    def __init__(self, verifier: Verifier, rules: Mapping[str, Rule] = RULES) -> None:
        self._verifier = verifier
        self._rules = rules

    def rule(self, method: str) -> Rule:
        return self._rules.get(method, _NOBODY)

    def principal(self, metadata: Mapping[str, Any]) -> Principal:
        header = metadata.get(AUTHORIZATION)
        if not header:
            raise Unauthenticated(
                "this call carries no credential; send `authorization: Bearer <credential>` (an agent's "
                "comes with the answer that opened it, an operator's from `ggmodules up` in ./var/)",
                reason=Reason.CREDENTIAL_MISSING,
            )
        scheme, _, token = str(header).partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated(
                "the authorization metadata is not `Bearer <credential>`",
                reason=Reason.CREDENTIAL_MALFORMED,
                metadata={"error": "scheme"},
            )
        return self._verifier.verify(token.strip())

    def admit(self, method: str, rule: Rule, who: Principal, request: Any) -> Principal:
        """`who` (verified by `principal`), if the rule admits it for this request; raises the refusal
        otherwise."""
        _require_acting(rule, request)
        self._check_role(method, rule, who)
        _check_scope(rule, who, request)
        return who

    def open(self, method: str, rule: Rule, metadata: Mapping[str, Any]) -> Principal:
        """A client stream's caller, checked once when the stream opens: its credential and role. Each
        message is then held to the rule by `check_message`."""
        who = self.principal(metadata)
        self._check_role(method, rule, who)
        return who

    @staticmethod
    def check_message(rule: Rule, who: Principal, request: Any) -> None:
        """One message of a client stream opened by `who`: it must name the credential's run and agent."""
        _require_acting(rule, request)
        _check_scope(rule, who, request)

    @staticmethod
    def _check_role(method: str, rule: Rule, who: Principal) -> None:
        name = method.rsplit("/", 1)[-1]
        if who.role not in rule.roles:
            raise PermissionDenied(
                f"{name} may not be called with a {who.role.value} credential; it needs one of: "
                f"{_names(rule.roles)}",
                reason=Reason.ROLE_NOT_PERMITTED,
                metadata={"method": name, "role": who.role.value, "allowed": _names(rule.roles)},
            )
        if rule.every_run_only and not who.every_run:
            raise PermissionDenied(
                f"this credential opens run {who.run_id} only; {name} needs an operator credential for every "
                "run (var/auth/operator.jwt from `ggmodules up`)",
                reason=Reason.WRONG_RUN,
                metadata={"method": name, "credential_run_id": who.run_id},
            )


def _field(request: Any, path: str) -> Any:
    """A request field by name; a dotted name reads into a message field (`write.agent_id`)."""
    if "." not in path:
        return getattr(request, path, "")
    names = _PATHS.get(path)
    if names is None:
        names = _PATHS[path] = tuple(path.split("."))
    value = request
    for name in names:
        value = getattr(value, name, "")
    return value


_PATHS: dict[str, tuple[str, ...]] = {}  # a dotted field name, split once


def _require_acting(rule: Rule, request: Any) -> None:
    if rule.roles == AGENT and rule.agent_field and not _field(request, rule.agent_field):
        raise missing(rule.agent_field)  # who acts is the first thing an agent's call says


def _check_scope(rule: Rule, who: Principal, request: Any) -> None:
    if rule.run_field and not who.every_run:
        run_id = _field(request, rule.run_field)
        if run_id != who.run_id and (run_id or not rule.unscoped_ok):
            asked = f"run {run_id}" if run_id else "every run"
            raise PermissionDenied(
                f"this credential opens run {who.run_id} only, not {asked}",
                reason=Reason.WRONG_RUN,
                metadata={"run_id": run_id, "credential_run_id": who.run_id},
            )
    if rule.agent_field and who.role is Role.AGENT:
        acting = _field(request, rule.agent_field)
        if acting and acting != who.subject:
            raise PermissionDenied(
                f"the request's {rule.agent_field} is {acting[:128]} but its credential is agent "
                f"{who.subject}; an agent acts only as itself (use {acting[:128]}'s own credential)",
                reason=Reason.AGENT_MISMATCH,
                metadata={"field": rule.agent_field, "agent_id": acting[:128],
                          "credential_agent_id": who.subject},
            )


def bind_principal(who: Principal | None) -> contextvars.Token[Principal | None]:
    return _principal.set(who)


def unbind_principal(token: contextvars.Token[Principal | None]) -> None:
    # A stream's last step may run in another context; that context ends with the call anyway.
    with contextlib.suppress(ValueError):
        _principal.reset(token)
