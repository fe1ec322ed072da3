"""R47: page_size 0 asks for a default page, never for everything (core/modules/pages.py). On main GetStore
with page_size 0 returned a whole history."""

from __future__ import annotations

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.core.modules.pages import STORE_CONTENTS
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import Suite, assert_refused, stubs
from tests.harness.modulestore import new_run, open_agent, write


def test_r47_get_store_page_size_0_answers_the_default_page_of_a_long_history(suite: Suite) -> None:
    modulestore = stubs(suite.channel(suite.modulestore.address), "modulestore")
    agent = open_agent(modulestore, new_run(), "coder-0")
    said = [ms.MessageInput(role="user", content=f"m{i}") for i in range(STORE_CONTENTS.default + 200)]
    write(modulestore, agent, c.KIND_HISTORY, append_messages=svc.AppendMessages(messages=said))
    read = svc.GetStoreRequest(run_id=agent.run_id, store_id=agent[c.KIND_HISTORY], agent_id=agent.agent_id)
    first = modulestore.GetStore(read).contents.history
    assert [m.content for m in first.messages] == [m.content for m in said[: STORE_CONTENTS.default]]
    assert first.message_count == len(said)
    read.page_size = 10 * STORE_CONTENTS.maximum
    assert len(modulestore.GetStore(read).contents.history.messages) == STORE_CONTENTS.maximum
    read.after_seq = first.messages[-1].seq
    rest = modulestore.GetStore(read).contents.history.messages
    assert [m.content for m in rest] == [m.content for m in said[STORE_CONTENTS.default :]]


def test_r47_a_negative_page_size_is_refused_by_every_paged_read(suite: Suite) -> None:
    """GetStore, ListStores and ReadOutbox had read a negative page_size as 0 (the default page), while
    SearchArchive and Registry's lists refused it: one rule now, refused naming the field."""
    modulestore = stubs(suite.channel(suite.modulestore.address), "modulestore")
    agent = open_agent(modulestore, new_run(), "coder-0")
    reads = {
        "GetStore": lambda: modulestore.GetStore(svc.GetStoreRequest(
            run_id=agent.run_id, store_id=agent[c.KIND_HISTORY], agent_id=agent.agent_id, page_size=-1)),
        "ListStores": lambda: modulestore.ListStores(
            svc.ListStoresRequest(run_id=agent.run_id, page_size=-1)),
        "ReadOutbox": lambda: modulestore.ReadOutbox(svc.ReadOutboxRequest(page_size=-1)),
    }  # fmt: skip
    for name, read in reads.items():
        refusal = assert_refused(read, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
        assert refusal.metadata.get("field") == "page_size", name
        assert "cannot be negative (0 means the default)" in refusal.message, name
