"""A runtime's per-turn context breakdown (R43): the source of measured costs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ggmodules.core.errors import InvalidArgument, missing
from ggmodules.core.kinds import Kind, kind_from_value


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
    rows = []
    for i, (value, store_id, tokens) in enumerate(modules):
        field = f"modules[{i}]"
        kind = kind_from_value(value, field=f"{field}.kind")
        if tokens < 0:
            raise _bad(f"{field}.tokens", f"{field}.tokens {tokens} is negative; report 0 for none")
        rows.append(ModuleTokens(kind, store_id, tokens))
    return TurnReport(run_id, agent_id, turn, tuple(rows))


def _bad(field: str, message: str) -> InvalidArgument:
    return InvalidArgument(message, metadata={"field": field}, violations=[(field, message)])
