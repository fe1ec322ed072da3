"""history: the window. A system-prompt slot, a thread of messages, open views, pinned blocks, a turn counter.

The thread is an append-only log kept beside the state (so a fork copies none of it); the state holds the
rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ggmodules.core.errors import FailedPrecondition, NotFound, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.caps import check_caps
from ggmodules.core.modules.contents import Block, HistoryContents, Message
from ggmodules.core.modules.figures import Figures, text_bytes
from ggmodules.core.modules.ops import (
    AppendMessages,
    CloseView,
    OpenView,
    PinBlock,
    SetSystemPrompt,
    UnpinBlock,
)
from ggmodules.core.modules.store import Applied, StoreHead

HistoryOp = SetSystemPrompt | AppendMessages | OpenView | CloseView | PinBlock | UnpinBlock


@dataclass(slots=True)
class HistoryState:
    system_prompt: str = ""
    system_prompt_set: bool = False
    open_views: dict[str, str] = field(default_factory=dict)
    pinned_blocks: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "sp": self.system_prompt,
            "sps": self.system_prompt_set,
            "views": self.open_views,
            "pins": self.pinned_blocks,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HistoryState:
        return cls(
            str(data.get("sp", "")),
            bool(data.get("sps", False)),
            dict(data.get("views", {})),
            dict(data.get("pins", {})),
        )

    def forked(self) -> HistoryState:
        """A window crosses a fork with its system-prompt slot empty (R24); views and pins are kept."""
        return HistoryState("", False, dict(self.open_views), dict(self.pinned_blocks))

    def text_bytes(self) -> int:
        return text_bytes(self.system_prompt, *self.open_views.values(), *self.pinned_blocks.values())

    def contents(self, messages: tuple[Message, ...], head: StoreHead) -> HistoryContents:
        return HistoryContents(
            system_prompt=self.system_prompt,
            system_prompt_set=self.system_prompt_set,
            messages=messages,
            open_views=tuple(Block(k, v) for k, v in self.open_views.items()),
            pinned_blocks=tuple(Block(k, v) for k, v in self.pinned_blocks.items()),
            turn=head.turn,
            message_count=head.head_seq,
        )


def append_messages(head: StoreHead, op: AppendMessages) -> Applied:
    """Appends to the thread without reading the state: the hot path."""
    turn = head.turn + 1 if op.start_turn else head.turn
    seq = head.head_seq
    added: list[Message] = []
    size = 0
    for m in op.messages:
        seq += 1
        added.append(Message(seq, m.role, m.content, turn))
        size += len(m.content.encode())
    before = head.figures
    after = Figures(before.items + len(added), before.bytes + size, before.writes)
    if head.caps.max_items or head.caps.max_bytes:
        check_caps(Kind.HISTORY, head.caps, (before.items, after.items), (before.bytes, after.bytes))
    messages = tuple(added)
    new_head = StoreHead(head.kind, head.caps, after, seq, turn, head.strategy, head.directory)
    delta = HistoryContents(messages=messages, turn=turn, message_count=seq)
    return Applied(new_head, delta, messages=messages)


def apply_state(head: StoreHead, state: HistoryState, op: HistoryOp) -> Applied:
    """The operations on the slot, views and pins (everything but appending to the thread)."""
    new = HistoryState(
        state.system_prompt, state.system_prompt_set, dict(state.open_views), dict(state.pinned_blocks)
    )
    delta = HistoryContents(turn=head.turn, message_count=head.head_seq)
    match op:
        case SetSystemPrompt(text=text):
            if state.system_prompt_set:
                raise FailedPrecondition(
                    "this window's system prompt is already set and is never rewritten (R9); "
                    "a new system prompt needs a new instance",
                    reason=Reason.SYSTEM_PROMPT_ALREADY_SET,
                )
            new.system_prompt, new.system_prompt_set = text, True
            delta = replace(delta, system_prompt=text, system_prompt_set=True)
        case OpenView(view_id=vid, content=content):
            new.open_views[vid] = content
        case PinBlock(block_id=bid, content=content):
            new.pinned_blocks[bid] = content
        case CloseView(view_id=vid):
            _pop(new.open_views, vid, "view")
        case UnpinBlock(block_id=bid):
            _pop(new.pinned_blocks, bid, "pinned block")
        case AppendMessages():
            return append_messages(head, op)
    if isinstance(op, OpenView | PinBlock | CloseView | UnpinBlock):
        # The views and pins after the operation, whole: a reader of the stream (the console) learns a
        # close or an unpin too, not only what was opened.
        delta = replace(
            delta,
            open_views=tuple(Block(k, v) for k, v in new.open_views.items()),
            pinned_blocks=tuple(Block(k, v) for k, v in new.pinned_blocks.items()),
        )
    before = head.figures
    after = replace(before, bytes=before.bytes - state.text_bytes() + new.text_bytes())
    check_caps(Kind.HISTORY, head.caps, (before.items, after.items), (before.bytes, after.bytes))
    return Applied(replace(head, figures=after), delta, state=new)


def _pop(blocks: dict[str, str], key: str, what: str) -> None:
    if key not in blocks:
        raise NotFound(
            f"no open {what} {key!r} in this window", reason=Reason.ENTRY_NOT_FOUND, metadata={"entry": key}
        )
    del blocks[key]


def forked_figures(figures: Figures, state: HistoryState) -> Figures:
    """A fork's figures: the same thread and blocks, without the system prompt."""
    return replace(figures, bytes=figures.bytes - text_bytes(state.system_prompt))
