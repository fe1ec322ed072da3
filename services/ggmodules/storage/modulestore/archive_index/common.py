"""What both indexes share: the part of a store's lineage a search covers, and a ranked row."""

from __future__ import annotations

from typing import NamedTuple


class Segment(NamedTuple):
    """Threads of `store_id` with lo < seq <= hi."""

    store_id: str
    lo: int
    hi: int


class Ranked(NamedTuple):
    seq: int
    title: str
    messages: str
    score: float
    snippet: str | None
