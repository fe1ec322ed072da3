"""JSON for what Registry stores whole: a run's launch-validated spec and an instance's roster."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from ggmodules.core.kinds import Kind, kind_from_word
from ggmodules.core.registry.fsm import Fsm, FsmEdge, FsmState
from ggmodules.core.registry.profiles import ModuleSpec, Profile
from ggmodules.core.roster import Caps, RosterRow
from ggmodules.core.vocabulary import MemoryScope, MemoryStrategy, Origin


def encode_spec(profiles: Sequence[Profile], fsm: Fsm | None) -> str:
    return json.dumps(
        {
            "profiles": [
                {"name": p.name, "modules": [_module(m) for m in p.modules.values()]} for p in profiles
            ],
            "fsm": None if fsm is None else {
                "initial": fsm.initial,
                "states": [[s.name, s.profile] for s in fsm.states],
                "edges": [[e.source, e.target, [k.word for k in e.carry]] for e in fsm.edges],
            },
        },
        sort_keys=True,
    )


# Decoded once per distinct text: every call of a transfer reads its run's spec and its agents' rosters, and
# what they decode to is never changed in place.
@functools.lru_cache(maxsize=256)
def decode_spec(text: str) -> tuple[tuple[Profile, ...], Fsm | None]:
    data = json.loads(text)
    profiles = tuple(
        Profile(p["name"], {spec.kind: spec for spec in (_spec(m) for m in p["modules"])})
        for p in data["profiles"]
    )
    raw = data["fsm"]
    fsm = None if raw is None else Fsm(
        raw["initial"],
        tuple(FsmState(name, profile) for name, profile in raw["states"]),
        tuple(FsmEdge(src, dst, tuple(kind_from_word(w) for w in carry)) for src, dst, carry in raw["edges"]),
    )
    return profiles, fsm


def encode_roster(rows: Sequence[RosterRow]) -> str:
    return json.dumps(
        [
            {
                "kind": r.kind.word, "store_id": r.store_id, "enabled": r.enabled, "origin": int(r.origin),
                "scope": int(r.scope), "may_write": r.may_write, "strategy": int(r.strategy),
            }
            for r in rows
        ]
    )


@functools.lru_cache(maxsize=1024)
def decode_roster(text: str) -> tuple[RosterRow, ...]:
    return tuple(
        RosterRow(
            kind=kind_from_word(r["kind"]), store_id=r["store_id"], enabled=r["enabled"],
            origin=Origin(r["origin"]), scope=MemoryScope(r["scope"]), may_write=r["may_write"],
            strategy=MemoryStrategy(r["strategy"]),
        )
        for r in json.loads(text)
    )


def _module(m: ModuleSpec) -> dict[str, Any]:
    return {
        "kind": m.kind.word, "read_only": m.read_only, "max_items": m.caps.max_items,
        "max_bytes": m.caps.max_bytes, "strategy": int(m.strategy), "scope": int(m.scope),
        "skills_directory": m.skills_directory,
    }


def _spec(m: dict[str, Any]) -> ModuleSpec:
    kind: Kind = kind_from_word(m["kind"])
    return ModuleSpec(
        kind=kind, read_only=m["read_only"], caps=Caps(m["max_items"], m["max_bytes"]),
        strategy=MemoryStrategy(m["strategy"]), scope=MemoryScope(m["scope"]),
        skills_directory=m["skills_directory"],
    )
