"""An OpenAI Agents SDK `Session` backed by a ggmodules history module.

The Agents SDK keeps a conversation in a `Session` (`get_items`, `add_items`, `pop_item`, `clear_session`);
this one keeps it in an agent's window, so the conversation lives in the suite: forked, handed on along an
FSM edge, rendered into the prompt, streamed to the console like any other write.

    async with AsyncClient() as gg:
        run = await gg.create_run("chat", [Profile("assistant")])
        agent = await gg.open_instance(run.id, "assistant")
        session = HistorySession(agent)
        result = await Runner.run(Agent(name="assistant"), "Hello", session=session)   # needs a model

Each item is one message of the thread (role: the item's role, or its type for tool calls; content: the
item as JSON), and one `add_items` is one write. A window is append-only (nothing in it is ever rewritten),
so `pop_item` and `clear_session` append a marker message (role `session`) that `get_items` honours: the
thread keeps the whole exchange for the record, and the session reads what the Agents SDK expects.

Run `python -m examples.openai_agents_session` while `make run` is up: it plays a short exchange through the
session's methods (no model is called) and prints what the window holds.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents.memory import SessionSettings

from ggmodules.sdk import AsyncAgent, AsyncClient, Profile

MARKER_ROLE = "session"
PAGE = 1000


class HistorySession:
    """A `agents.memory.Session` over the history module of one ggmodules agent (written as that agent)."""

    session_settings: SessionSettings | None = None

    def __init__(self, agent: AsyncAgent, session_id: str | None = None) -> None:
        self.agent = agent
        self.session_id = session_id or f"{agent.run_id}/{agent.id}"

    async def _thread(self) -> list[tuple[int, str, str]]:
        """Every message of the window as (seq, role, content), page after page."""
        messages: list[tuple[int, str, str]] = []
        after = 0
        while True:
            page = await self.agent.history.contents(after_seq=after, page_size=PAGE)
            messages += [(m.seq, m.role, m.content) for m in page.messages]
            if not page.messages or len(messages) >= page.message_count:
                return messages
            after = page.messages[-1].seq

    async def _live(self) -> list[tuple[int, dict[str, Any]]]:
        """The items the session holds: the thread's items minus those popped or cleared by a marker."""
        live: list[tuple[int, dict[str, Any]]] = []
        for seq, role, content in await self._thread():
            if role != MARKER_ROLE:
                live.append((seq, json.loads(content)))
                continue
            marker = json.loads(content)
            if "popped" in marker:
                live = [(s, item) for s, item in live if s != marker["popped"]]
            elif "cleared_through" in marker:
                live = [(s, item) for s, item in live if s > marker["cleared_through"]]
        return live

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = [item for _, item in await self._live()]
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        if not items:
            return
        messages = [(str(item.get("role") or item.get("type") or "item"), json.dumps(item)) for item in items]
        starts_turn = any(item.get("role") == "user" for item in items)
        await self.agent.history.extend(messages, start_turn=starts_turn)

    async def pop_item(self) -> Any | None:
        live = await self._live()
        if not live:
            return None
        seq, item = live[-1]
        await self.agent.history.append(MARKER_ROLE, json.dumps({"popped": seq}))
        return item

    async def clear_session(self) -> None:
        thread = await self._thread()
        if thread:
            await self.agent.history.append(MARKER_ROLE, json.dumps({"cleared_through": thread[-1][0]}))


async def demo() -> None:
    async with AsyncClient() as gg:
        run = await gg.create_run("openai-agents-session", [Profile("assistant")])
        agent = await gg.open_instance(run.id, "assistant")
        session = HistorySession(agent)
        await session.add_items([{"role": "user", "content": "What is ggmodules?"},
                                 {"role": "assistant", "content": "State for agent runtimes."}])
        await session.add_items([{"role": "user", "content": "Thanks"}])
        print("popped:", await session.pop_item())
        print("session:", await session.get_items())
        print("window:", [(m.role, m.content) for m in (await agent.history.contents()).messages])


if __name__ == "__main__":
    asyncio.run(demo())
