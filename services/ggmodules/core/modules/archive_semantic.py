"""Semantic and hybrid archive search: the embedding-provider interface, what is embedded, and the fusion of
rankings. Off unless ModuleStore is started with an embedding provider (see README, `pip install
ggmodules[semantic]`).

SEMANTIC ranks a store's threads by the cosine similarity of their embedding to the query's. HYBRID fuses
the TEXT ranking and the SEMANTIC ranking by reciprocal rank (each list's first FUSED_DEPTH threads; a
thread scores the sum of 1 / (RRF_K + its rank) over the lists it is in), so a thread both find comes
first, and either alone still finds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ggmodules.core.modules.archive_search import ELLIPSIS
from ggmodules.core.modules.contents import ArchivedThread

RRF_K = 60
# How deep each ranking goes into a fusion, and so how far HYBRID can page.
FUSED_DEPTH = 200
OPENING_WORDS = 24


class Embedder(Protocol):
    """Turns texts into unit-length vectors; threads and queries are embedded alike."""

    # Stored beside each vector: vectors of another model are never compared with this one's.
    name: str

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


def thread_text(title: str, contents: Sequence[str]) -> str:
    """What is embedded for a thread: its title, then its messages' contents."""
    return "\n".join((title, *contents))


def fuse(rankings: Sequence[Sequence[int]]) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion of thread-id rankings: (thread id, score), best first; ties newest first."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, thread_id in enumerate(ranking[:FUSED_DEPTH], start=1):
            scores[thread_id] = scores.get(thread_id, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))


def opening(thread: ArchivedThread) -> str:
    """The snippet of a thread found by meaning alone: its first words."""
    words = thread_text(thread.title, [m.content for m in thread.messages]).split()
    text = " ".join(words[:OPENING_WORDS])
    return text + ELLIPSIS if len(words) > OPENING_WORDS else text
