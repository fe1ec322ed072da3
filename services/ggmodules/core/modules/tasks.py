"""tasks: a task list whose `blocked_by` edges form a DAG. Ids are monotonic and survive forks."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ggmodules.core.errors import FailedPrecondition, InvalidArgument, NotFound, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.caps import check_caps
from ggmodules.core.modules.contents import Task, TasksContents
from ggmodules.core.modules.figures import Figures, text_bytes
from ggmodules.core.modules.ops import CreateTask, UpdateTask
from ggmodules.core.modules.store import Applied, StoreHead
from ggmodules.core.modules.values import TaskStatus

TasksOp = CreateTask | UpdateTask


@dataclass(slots=True)
class TasksState:
    tasks: dict[int, Task] = field(default_factory=dict)
    next_id: int = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "next": self.next_id,
            "tasks": [
                [t.id, t.title, t.description, int(t.status), list(t.blocked_by)] for t in self.tasks.values()
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TasksState:
        tasks = {t[0]: Task(t[0], t[1], t[2], TaskStatus(t[3]), tuple(t[4])) for t in data.get("tasks", [])}
        return cls(tasks, int(data.get("next", 1)))

    def copy(self) -> TasksState:
        return TasksState(dict(self.tasks), self.next_id)

    def figures(self, writes: int) -> Figures:
        return Figures(
            len(self.tasks), sum(text_bytes(t.title, t.description) for t in self.tasks.values()), writes
        )

    def contents(self) -> TasksContents:
        return TasksContents(tuple(self.tasks.values()), self.next_id)


def apply(head: StoreHead, state: TasksState, op: TasksOp) -> Applied:
    new = state.copy()
    task_id = 0
    match op:
        case CreateTask(title=title, description=description, blocked_by=blocked_by):
            _check_edges(new, blocked_by)
            task_id = new.next_id
            new.tasks[task_id] = Task(task_id, title, description, TaskStatus.OPEN, _unique(blocked_by))
            new.next_id += 1
        case UpdateTask(task_id=tid, status=status, add_blocked_by=add, remove_blocked_by=remove):
            task = new.tasks.get(tid)
            if task is None:
                raise NotFound(
                    f"no task {tid} in this task list",
                    reason=Reason.ENTRY_NOT_FOUND,
                    metadata={"entry": str(tid)},
                )
            _check_edges(new, add)
            edges = tuple(e for e in _unique((*task.blocked_by, *add)) if e not in set(remove))
            new.tasks[tid] = replace(task, status=status or task.status, blocked_by=edges)
            _check_acyclic(new, tid)
            task_id = tid
    before, after = head.figures, new.figures(head.figures.writes)
    check_caps(Kind.TASKS, head.caps, (before.items, after.items), (before.bytes, after.bytes))
    return Applied(replace(head, figures=after), new.contents(), state=new, task_id=task_id)


def _unique(ids: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(ids))


def _check_edges(state: TasksState, ids: tuple[int, ...]) -> None:
    dangling = [i for i in ids if i not in state.tasks]
    if dangling:
        raise InvalidArgument(
            f"blocked_by names task(s) {dangling} that do not exist in this task list",
            reason=Reason.DANGLING_EDGE,
            metadata={"tasks": ",".join(map(str, dangling))},
            violations=[("blocked_by", f"no task {i}") for i in dangling],
        )


def _check_acyclic(state: TasksState, start: int) -> None:
    """Refuses the edit if `start` now (transitively) waits on itself."""
    stack, seen = list(state.tasks[start].blocked_by), set()
    while stack:
        tid = stack.pop()
        if tid == start:
            raise FailedPrecondition(
                f"task {start} would wait on itself through its blocked_by edges; the edges must form a DAG",
                reason=Reason.TASK_CYCLE,
                metadata={"task": str(start)},
            )
        if tid not in seen:
            seen.add(tid)
            stack.extend(state.tasks[tid].blocked_by)
