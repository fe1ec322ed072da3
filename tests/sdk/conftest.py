from __future__ import annotations

from collections.abc import Iterator

import pytest

from ggmodules.sdk import Client, Memories, Profile
from tests.harness import Suite

# A profile per shape the tests need: every kind on; the bare minimum; a read-only, capped task list.
PLANNER = Profile("planner", memories=Memories(strategy="scratchpad", scope="agent"), tasks=True,
                  skills="planning", archive=True)
WRITER = Profile("writer", memories=Memories(strategy="markdown_index", scope="instance"), tasks=True)
BARE = Profile("bare")
PROFILES = [PLANNER, WRITER, BARE]


@pytest.fixture()
def gg(suite: Suite) -> Iterator[Client]:
    with Client(registry=suite.registry.address, modulestore=suite.modulestore.address) as client:
        yield client
