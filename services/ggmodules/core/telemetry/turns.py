"""A runtime's per-turn context breakdown (R43): the source of measured costs, and what a report must be.

A report is refused, changing nothing, when it:
- gives a figure for the archive, whose cost is none by construction (R43: no context band), or names a
  kind twice (INVALID_ARGUMENT);
- names an agent that is not an instance of the run (NOT_FOUND; see `server/telemetry/turns.py` for how
  an agent Telemetry has not ingested yet is confirmed with the Registry);
- gives a figure for a kind the agent does not hold (FAILED_PRECONDITION KIND_NOT_HELD) or names a store
  that is not the one its roster bound for that kind (PERMISSION_DENIED NOT_A_HOLDER);
- repeats the agent's last reported turn (ALREADY_EXISTS TURN_ALREADY_REPORTED, with the first report's
  cursor) or goes below it (FAILED_PRECONDITION TURN_OUT_OF_ORDER). Turns only go forward, gaps allowed;
  a retry reuses the request id and gets the first answer (R49) before any of this is checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ggmodules.core.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    Reason,
    missing,
)
from ggmodules.core.kinds import Kind, kind_from_value

# Kinds whose per-turn cost is none by construction (R43): they hold no context band.
NO_CONTEXT_BAND = (Kind.ARCHIVE,)


@dataclass(frozen=True, slots=True)
class ModuleTokens:
    kind: Kind
    store_id: str
    tokens: int


@dataclass(frozen=True, slots=True)
class TurnReport:
    run_id: str
    agent_id: str
    turn: int
    modules: tuple[ModuleTokens, ...]


@dataclass(frozen=True, slots=True)
class KnownAgent:
    """An agent as Telemetry knows it: the store bound per kind it holds (its roster, R32, which never
    changes, R36), and the last turn it reported, if any, with that report's cursor."""

    run_id: str
    agent_id: str
    held: Mapping[Kind, str]
    last_turn: int | None = None
    last_cursor: int = 0


def held_of(rows: Iterable[tuple[int, str, bool]]) -> dict[Kind, str]:
    """The store bound per kind a roster has on, from its rows as (kind value, store id, enabled)."""
    return {Kind(kind): store_id for kind, store_id, enabled in rows if enabled and store_id}


def validate_turn(
    run_id: str, agent_id: str, turn: int, modules: Sequence[tuple[int, str, int]]
) -> TurnReport:
    """`modules` as (kind value, store id, tokens)."""
    if not run_id:
        raise missing("run_id")
    if not agent_id:
        raise missing("agent_id")
    if turn < 0:
        raise _bad("turn", f"turn {turn} is negative; turns count from 0")
    rows: list[ModuleTokens] = []
    for i, (value, store_id, tokens) in enumerate(modules):
        field = f"modules[{i}]"
        kind = kind_from_value(value, field=f"{field}.kind")
        if kind in NO_CONTEXT_BAND:
            message = (
                f"{field}: the {kind.word} holds no context band, so its per-turn cost is none by "
                f"construction (R43), not a figure; leave {kind.word} out of the report"
            )
            raise InvalidArgument(
                message,
                reason=Reason.COST_NONE_BY_CONSTRUCTION,
                metadata={"field": f"{field}.kind", "kind": kind.word},
                violations=[(f"{field}.kind", message)],
            )
        if any(r.kind is kind for r in rows):
            raise _bad(f"{field}.kind", f"{field}: {kind.word} is reported twice; one figure per kind")
        if tokens < 0:
            raise _bad(f"{field}.tokens", f"{field}.tokens {tokens} is negative; report 0 for none")
        rows.append(ModuleTokens(kind, store_id, tokens))
    return TurnReport(run_id, agent_id, turn, tuple(rows))


def admit_turn(report: TurnReport, agent: KnownAgent) -> None:
    """Refuses a report the agent's roster or its earlier reports rule out."""
    for i, m in enumerate(report.modules):
        bound = agent.held.get(m.kind)
        if bound is None:
            raise FailedPrecondition(
                f"modules[{i}]: agent {agent.agent_id!r} holds no {m.kind.word} module, so it has no "
                f"{m.kind.word} cost; report only the kinds on its roster",
                reason=Reason.KIND_NOT_HELD,
                metadata={"agent_id": agent.agent_id, "kind": m.kind.word},
            )
        if m.store_id and m.store_id != bound:
            raise PermissionDenied(
                f"modules[{i}]: agent {agent.agent_id!r} does not hold {m.store_id!r}; its {m.kind.word} "
                f"store is {bound!r}",
                reason=Reason.NOT_A_HOLDER,
                metadata={"agent_id": agent.agent_id, "store_id": m.store_id, "held": bound},
            )
    last = agent.last_turn
    if last is None:
        return
    about = {"agent_id": agent.agent_id, "last_turn": str(last), "cursor": str(agent.last_cursor)}
    if report.turn == last:
        raise AlreadyExists(
            f"agent {agent.agent_id!r} already reported turn {last} (cursor {agent.last_cursor}); the first "
            "report stands. Retry with the first report's request_id to get its answer, or report the next "
            "turn",
            reason=Reason.TURN_ALREADY_REPORTED,
            metadata=about,
        )
    if report.turn < last:
        raise FailedPrecondition(
            f"turn {report.turn} is below turn {last}, the last agent {agent.agent_id!r} reported; turns "
            "only go forward",
            reason=Reason.TURN_OUT_OF_ORDER,
            metadata=about,
        )


def _bad(field: str, message: str) -> InvalidArgument:
    return InvalidArgument(message, metadata={"field": field}, violations=[(field, message)])
