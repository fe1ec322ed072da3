"""R47: how large a call's headers may be is a line, not a lottery. grpc refuses headers past its soft limit
(8 KiB by default) at random and past its hard one (16 KiB) always; on main a Write carrying 15 KiB of
headers was refused RESOURCE_EXHAUSTED about 39 times in 40 and applied the 40th. Every service now sets both
limits to 16 KiB (runtime/channels.py MESSAGE_LIMITS): every call under it is served, every call over it
refused, and a refused write changes nothing."""

from __future__ import annotations

from typing import Any

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.runtime.channels import MAX_METADATA_BYTES
from tests.harness import refused
from tests.harness.modulestore import Agent, contents, messages, new_run, open_agent

CALLS = 30


def note(size: int) -> tuple[tuple[str, str], ...]:
    """A header of `size` bytes, name and value together, as a runtime might send a trace note."""
    name = "x-runtime-note"
    return ((name, "n" * (size - len(name))),)


def append(modulestore: Any, agent: Agent, text: str, headers: tuple[tuple[str, str], ...]) -> None:
    request = svc.WriteRequest(run_id=agent.run_id, agent_id=agent.agent_id, store_id=agent[c.KIND_HISTORY],
                               append_messages=svc.AppendMessages(messages=messages(text)))
    modulestore.Write(request, metadata=headers)


def test_r47_every_write_under_the_header_limit_is_applied(modulestore: Any) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    headers = note(MAX_METADATA_BYTES - 1024)  # with the credential and grpc's own, still under the limit
    for n in range(CALLS):
        append(modulestore, agent, f"turn {n}", headers)
    thread = contents(modulestore, agent, c.KIND_HISTORY).contents.history.messages
    assert [m.content for m in thread] == [f"turn {n}" for n in range(CALLS)]


def test_r47_every_write_over_the_header_limit_is_refused_and_changes_nothing(modulestore: Any) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    for n in range(CALLS):
        refusal = refused(append, modulestore, agent, f"turn {n}", note(MAX_METADATA_BYTES + 1024))
        assert refusal.code is grpc.StatusCode.RESOURCE_EXHAUSTED, refusal.message
        assert "metadata" in refusal.message
    assert contents(modulestore, agent, c.KIND_HISTORY).store.figures.writes == 0
