"""examples/openai_agents_session.py: an OpenAI Agents SDK Session kept in a ggmodules history module.

Against the real services, no network and no model: the Session protocol's methods directly, then the Agents
SDK's own Runner driving the session (its model a local stand-in that answers from the input it is given, so
the test sees exactly what the Runner read from the session).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents import Agent as OpenAIAgent
from agents import RunConfig, Runner
from agents.items import ModelResponse
from agents.memory import Session
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from examples.openai_agents_session import MARKER_ROLE, HistorySession
from ggmodules.sdk import AsyncClient, Client, Profile
from tests.harness import Suite

ASSISTANT = Profile("assistant", tasks=True)


def test_the_session_keeps_the_conversation_in_the_agents_window_and_honours_pop_and_clear(
    suite: Suite,
) -> None:
    async def session_methods() -> tuple[str, str]:
        async with AsyncClient(suite.registry.address, suite.modulestore.address) as gg:
            run = await gg.create_run("openai session", [ASSISTANT])
            agent = await gg.open_instance(run.id, "assistant")
            session = HistorySession(agent)
            assert isinstance(session, Session)
            assert await session.get_items() == [] and await session.pop_item() is None
            first = [{"role": "user", "content": "What is ggmodules?"},
                     {"role": "assistant", "content": "State for agent runtimes."}]
            await session.add_items(first)
            call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
            await session.add_items([call])
            assert await session.get_items(limit=2) == [first[1], call]
            assert (await session.pop_item())["type"] == "function_call"
            # A second session over the same agent (another process, a restart) reads the same.
            assert await HistorySession(agent).get_items() == first
            await session.clear_session()
            await session.add_items([{"role": "user", "content": "Start over"}])
            assert await session.get_items() == [{"role": "user", "content": "Start over"}]
            return run.id, agent.id

    run_id, agent_id = asyncio.run(session_methods())
    with Client(suite.registry.address, suite.modulestore.address) as gg:
        window = gg.agent(run_id, agent_id).history.contents()
    roles = [m.role for m in window.messages]
    assert roles == ["user", "assistant", "function_call", MARKER_ROLE, MARKER_ROLE, "user"]
    assert window.turn == 2  # each add_items with a user message starts a turn
    assert json.loads(window.messages[0].content) == {"role": "user", "content": "What is ggmodules?"}


class EchoModel(Model):
    """A local model: answers with how many input items it was given and the last one's text."""

    def __init__(self) -> None:
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(input)
        text = f"{len(input)} items; last: {input[-1]['content']}"
        message = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                        content=[ResponseOutputText(type="output_text", text=text,
                                                                    annotations=[])])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_the_agents_sdk_runner_reads_and_writes_its_conversation_through_the_session(suite: Suite) -> None:
    model = EchoModel()

    async def two_turns() -> tuple[list[Any], str, str]:
        async with AsyncClient(suite.registry.address, suite.modulestore.address) as gg:
            run = await gg.create_run("openai runner", [ASSISTANT])
            agent = await gg.open_instance(run.id, "assistant")
            session = HistorySession(agent)
            assistant = OpenAIAgent(name="assistant", instructions="Be brief.", model=model)
            config = RunConfig(tracing_disabled=True)
            await Runner.run(assistant, "Hello", session=session, run_config=config)
            second = await Runner.run(assistant, "Again", session=session, run_config=config)
            return await session.get_items(), str(second.final_output), run.id

    items, answer, _run_id = asyncio.run(two_turns())
    assert len(model.inputs[1]) == 3  # the second turn saw the first turn's two items, read from the window
    assert answer == "3 items; last: Again"
    assert [item.get("role") for item in items] == ["user", "assistant", "user", "assistant"]
    assert items[0]["content"] == "Hello" and items[2]["content"] == "Again"
