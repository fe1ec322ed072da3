"""Caps on writes (R23): contents already over a cap are kept; a write that would add beyond it is refused.

Two ceilings apply to every write, and both only refuse growth (shrinking is always allowed):
- the caps a profile resolved for the store (`Caps`, zero meaning none), and
- the service's own limit on one store's size (`StoreLimits`), whatever the profile says, so that every
  store, and every agent's prompt, can still be read back in one message. A store's size counts its text
  bytes plus ITEM_BYTES for each item (the roles, names, ids and framing an item carries besides its
  text). The default, DEFAULT_STORE_BYTES per store, is chosen so that RenderPrompt of an agent holding
  every kind at that size fits in one 16 MiB message with room to spare; the kinds that contribute to the
  prompt are history, memories, tasks and skills.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ggmodules.core.errors import Reason, ResourceExhausted
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.figures import Figures
from ggmodules.core.roster import Caps

ITEM_BYTES = 64
DEFAULT_STORE_BYTES = 2 * 1024 * 1024


def check_caps(kind: Kind, caps: Caps, items: tuple[int, int], size: tuple[int, int]) -> None:
    """Refuses a write taking (before, after) items or bytes beyond a cap; shrinking is always allowed."""
    for figure, limit, (before, after) in (("items", caps.max_items, items), ("bytes", caps.max_bytes, size)):
        if limit and after > limit and after > before:
            raise ResourceExhausted(
                f"this write would take the {kind.word} store to {after} {figure}, over its cap of {limit}; "
                "remove something first or ask for a larger cap",
                reason=Reason.CAP_EXCEEDED,
                metadata={"kind": kind.word, "figure": figure, "cap": str(limit), "after": str(after)},
            )


@dataclass(frozen=True, slots=True)
class StoreLimits:
    """The largest size (see the module docstring) a store of each kind may grow to."""

    default_bytes: int = DEFAULT_STORE_BYTES
    by_kind: Mapping[Kind, int] = field(default_factory=dict)

    def for_kind(self, kind: Kind) -> int:
        return self.by_kind.get(kind, self.default_bytes)


DEFAULT_LIMITS = StoreLimits()


def store_size(figures: Figures) -> int:
    return figures.bytes + ITEM_BYTES * figures.items


def check_store_size(kind: Kind, limit: int, before: Figures, after: Figures) -> None:
    """Refuses a write growing a store past the service's limit for its kind (RESOURCE_EXHAUSTED)."""
    grown = store_size(after)
    if grown > limit and grown > store_size(before):
        raise ResourceExhausted(
            f"this write would take the {kind.word} store to {grown} bytes ({after.bytes} of text and "
            f"{after.items} items at {ITEM_BYTES} bytes each), over the service's limit of {limit} bytes "
            "for one store; remove something first, or start a new store (e.g. archive the thread and "
            "open a new instance)",
            reason=Reason.CAP_EXCEEDED,
            metadata={
                "kind": kind.word, "figure": "size", "cap": str(limit), "after": str(grown),
                "limit": "service",
            },
        )
