"""R47, R48: CallTool's arguments_json is bounded in nesting and size. On main 50,000 nested brackets raised
RecursionError inside the JSON decoder, and an integer of more digits than Python converts a ValueError:
the call answered INTERNAL on both backends."""

from __future__ import annotations

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import Suite, refusal_of, stubs
from tests.harness.modulestore import contents, new_run, open_agent

DEEP = {
    "50,000 nested brackets": "[" * 50_000,
    "50,000 nested objects": '{"title":' * 50_000,
    "an integer of 5,000 digits": '{"title": "t", "blocked_by": [' + "7" * 5_000 + "]}",
}


@pytest.mark.parametrize("name", sorted(DEEP))
def test_r47_r48_arguments_json_the_decoder_cannot_take_is_refused_invalid_argument_unchanged(
    suite: Suite, name: str
) -> None:
    modulestore = stubs(suite.channel(suite.modulestore.address), "modulestore")
    agent = open_agent(modulestore, new_run(), "coder-0")
    request = svc.CallToolRequest(
        run_id=agent.run_id, agent_id=agent.agent_id, tool_name="create_task", arguments_json=DEEP[name]
    )
    with pytest.raises(grpc.RpcError) as caught:
        modulestore.CallTool(request)
    info = refusal_of(caught.value).info
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
    assert info is not None and info.reason == "INVALID_FIELD" and info.metadata["field"] == "arguments_json"
    assert contents(modulestore, agent, c.KIND_TASKS).store.figures.writes == 0
    request.arguments_json = '{"title": "' + "t" * 100_000 + '"}'  # large, but JSON the tool takes
    modulestore.CallTool(request)
    assert contents(modulestore, agent, c.KIND_TASKS).store.figures.items == 1
