"""Module handles: a holder's handle on one of its stores, one class per kind.

Every write is made as the agent the handle belongs to, on the store its roster names for the kind.
"""

from __future__ import annotations

from ggmodules.sdk import modulestore_calls as ms
from ggmodules.sdk.bound import Bound, M, bound_call
from ggmodules.sdk.plans import ModuleRef


class ModuleHandle(Bound[M]):
    _ref: ModuleRef

    @property
    def store_id(self) -> str:
        return self._ref.store_id

    @property
    def agent_id(self) -> str:
        return self._ref.agent_id

    store = bound_call(ms.store)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._ref.agent_id!r} on {self._ref.store_id!r})"


class HistoryHandle(ModuleHandle[M]):
    """The window (R4): system-prompt slot, thread, open views, pinned blocks, turn counter."""

    contents = bound_call(ms.history)
    set_system_prompt = bound_call(ms.set_system_prompt)
    append = bound_call(ms.append)
    extend = bound_call(ms.extend)
    open_view = bound_call(ms.open_view)
    close_view = bound_call(ms.close_view)
    pin = bound_call(ms.pin)
    unpin = bound_call(ms.unpin)


class MemoriesHandle(ModuleHandle[M]):
    """Memories under the store's strategy: a scratchpad, or markdown files with an index."""

    contents = bound_call(ms.memories)
    write_pad = bound_call(ms.write_pad)
    write_file = bound_call(ms.write_file)
    delete_file = bound_call(ms.delete_file)


class TasksHandle(ModuleHandle[M]):
    """The task list, a blocked-by DAG."""

    contents = bound_call(ms.tasks)
    create = bound_call(ms.create_task)
    update = bound_call(ms.update_task)


class BoardHandle(ModuleHandle[M]):
    """The run's board: issues `PREFIX-N`."""

    contents = bound_call(ms.board)
    create_issue = bound_call(ms.create_issue)
    update_issue = bound_call(ms.update_issue)


class SkillsHandle(ModuleHandle[M]):
    """The profile's catalogue and this holder's read set."""

    contents = bound_call(ms.skills)
    put = bound_call(ms.put_skill)
    read_skill = bound_call(ms.read_skill)


class ArchiveHandle(ModuleHandle[M]):
    """Archived threads: `archive_thread` fills it, `search` reads it."""

    contents = bound_call(ms.archive)
    archive_thread = bound_call(ms.archive_thread)
    search = bound_call(ms.search)
