"""memories: entries under a strategy. `scratchpad` is one free-text pad; `markdown_index` is named
markdown files, each with the line the index renders. Every entry names the agent it is attributed to.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ggmodules.core.errors import FailedPrecondition, NotFound, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.caps import check_caps
from ggmodules.core.modules.contents import MemoriesContents, MemoryEntry
from ggmodules.core.modules.figures import Figures, text_bytes
from ggmodules.core.modules.ops import DeleteFile, WriteFile, WritePad
from ggmodules.core.modules.store import Applied, StoreHead
from ggmodules.core.vocabulary import MemoryStrategy

PAD = "pad"
MemoriesOp = WritePad | WriteFile | DeleteFile


@dataclass(slots=True)
class MemoriesState:
    strategy: MemoryStrategy
    entries: dict[str, MemoryEntry] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": int(self.strategy),
            "entries": [[e.name, e.body, e.index_line, e.agent_id] for e in self.entries.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MemoriesState:
        entries = {e[0]: MemoryEntry(*e) for e in data.get("entries", [])}
        return cls(MemoryStrategy(int(data.get("strategy", MemoryStrategy.SCRATCHPAD))), entries)

    def restamped(self, agent_id: str) -> MemoriesState:
        """A fork's copy: every entry attributed to the copy's agent (R17)."""
        return MemoriesState(
            self.strategy, {k: replace(e, agent_id=agent_id) for k, e in self.entries.items()}
        )

    def figures(self, writes: int) -> Figures:
        size = sum(text_bytes(e.body, e.index_line) for e in self.entries.values())
        return Figures(len(self.entries), size, writes)

    def contents(self) -> MemoriesContents:
        return MemoriesContents(self.strategy, tuple(self.entries.values()))


def apply(head: StoreHead, state: MemoriesState, op: MemoriesOp, writer: str) -> Applied:
    new = MemoriesState(state.strategy, dict(state.entries))
    match op:
        case WritePad(text=text):
            _require(state, MemoryStrategy.SCRATCHPAD, "write_pad")
            new.entries[PAD] = MemoryEntry(PAD, text, "", writer)
        case WriteFile(name=name, body=body, index_line=line):
            _require(state, MemoryStrategy.MARKDOWN_INDEX, "write_file")
            new.entries[name] = MemoryEntry(name, body, line or name, writer)
        case DeleteFile(name=name):
            _require(state, MemoryStrategy.MARKDOWN_INDEX, "delete_file")
            if name not in new.entries:
                raise NotFound(
                    f"no memory file {name!r} in this store",
                    reason=Reason.ENTRY_NOT_FOUND,
                    metadata={"entry": name},
                )
            del new.entries[name]
    before, after = head.figures, new.figures(head.figures.writes)
    check_caps(Kind.MEMORIES, head.caps, (before.items, after.items), (before.bytes, after.bytes))
    return Applied(replace(head, figures=after), new.contents(), state=new)


def _require(state: MemoriesState, strategy: MemoryStrategy, op: str) -> None:
    if state.strategy != strategy:
        raise FailedPrecondition(
            f"{op} needs a {strategy.name.lower()} memories store; this one is {state.strategy.name.lower()}",
            reason=Reason.WRONG_KIND,
            metadata={"strategy": state.strategy.name.lower(), "op": op},
        )
