"""Caps on writes (R23): contents already over a cap are kept; a write that would add beyond it is refused."""

from __future__ import annotations

from ggmodules.core.errors import Reason, ResourceExhausted
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.figures import Caps


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
