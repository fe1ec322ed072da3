from __future__ import annotations

import pytest

from tests.bad_input._support.world import World
from tests.harness import Suite


@pytest.fixture(scope="module")
def world(suite: Suite) -> World:
    """The four public services with a few seeded runs (three runs, each with a planner, its fork and the
    coder the fork became by an FSM transition)."""
    return World.seed(suite)
