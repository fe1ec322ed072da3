"""SearchArchive in SEMANTIC or HYBRID mode: first the store's threads that have no vector yet are embedded
(a batch at a time, on a worker thread so that the event loop keeps serving) and their vectors saved; then
the query is embedded and the store searched. A thread archived just before is so found at once; the first
such search of a large archive embeds all of it (about a thousand threads a second on one core)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ggmodules.core.modules.archive_search import ArchiveSearch, SearchPage
from ggmodules.core.modules.archive_semantic import Embedder
from ggmodules.storage.modulestore.archive_index.vectors import pack
from ggmodules.storage.modulestore.repository import ModuleStoreRepository

BATCH = 64


async def search(
    repo: ModuleStoreRepository,
    run: Callable[..., Awaitable[Any]],
    embedder: Embedder,
    run_id: str,
    agent_id: str,
    store_id: str,
    search: ArchiveSearch,
) -> SearchPage:
    while missing := await run(repo.unembedded, run_id, agent_id, store_id, embedder.name, BATCH):
        vectors = await asyncio.to_thread(embedder.embed, [text for _, _, text in missing])
        rows = [(s, q, pack(v)) for (s, q, _), v in zip(missing, vectors, strict=True)]
        await run(repo.save_vectors, run_id, embedder.name, rows)
    (query,) = await asyncio.to_thread(embedder.embed, [search.query.text])
    page: SearchPage = await run(
        repo.search_archive, run_id, agent_id, store_id, search, query, embedder.name
    )
    return page
