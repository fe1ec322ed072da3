"""CallTool: a model's tool call on one of its agent's modules (R8): a search, a write, or a read of the
module's contents after the write. The agent must hold a module of the tool's kind."""

from __future__ import annotations

from ggmodules.core.errors import FailedPrecondition, Reason
from ggmodules.core.modules.caps import DEFAULT_LIMITS, StoreLimits
from ggmodules.core.modules.contents import ArchiveContents
from ggmodules.core.modules.handover import handed_on
from ggmodules.core.modules.tools.dispatch import Result, ToolCall, found, result_of, search_of
from ggmodules.usecases.modulestore.port import ToolCallUnit
from ggmodules.usecases.modulestore.write import write


def call_tool(
    unit: ToolCallUnit, run_id: str, agent_id: str, call: ToolCall, limits: StoreLimits = DEFAULT_LIMITS
) -> Result:
    stores = unit.held(run_id, agent_id, call.kind)
    if not stores:
        successor = unit.successor_of(run_id, agent_id)
        if successor is not None:
            raise handed_on(agent_id, successor)
        raise FailedPrecondition(
            f"agent {agent_id!r} holds no {call.kind.word} module: {call.tool.name} is not one of its tools",
            reason=Reason.KIND_NOT_HELD,
            metadata={"kind": call.kind.word, "tool": call.tool.name},
        )
    row, read_set_id = stores[0]
    if call.searches:
        return found(unit.search(run_id, row.store_id, row.head_seq, search_of(call, row.store_id)))
    written = None
    if call.op:
        written = write(unit, run_id, agent_id, row.store_id, call.op, limits)
    if not call.needs_contents:
        return result_of(call, ArchiveContents(), written)
    if written is not None:
        return result_of(call, unit.contents(run_id, row.store_id, read_set_id), written)
    return result_of(call, unit.contents_of(row, read_set_id), written)
