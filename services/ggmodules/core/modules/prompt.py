"""What each kind contributes to its holder's prompt (R4-R10). Fixed per kind; nothing configures it."""

from __future__ import annotations

from dataclasses import dataclass

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import (
    Contents,
    HistoryContents,
    MemoriesContents,
    SkillsContents,
    Task,
    TasksContents,
)
from ggmodules.core.vocabulary import MemoryStrategy


@dataclass(frozen=True, slots=True)
class PromptMessage:
    role: str
    content: str
    # system_prompt, thread, open_view, pinned_block, tasks, scratchpad, memory_index, skills_catalogue,
    # skill_body
    section: str


@dataclass(frozen=True, slots=True)
class Contribution:
    kind: Kind
    store_id: str
    contributes_nothing: bool
    messages: tuple[PromptMessage, ...] = ()


def render(kind: Kind, store_id: str, contents: Contents) -> Contribution:
    """Board and archive contribute nothing: they reach the model through their tools alone (R8)."""
    match contents:
        case HistoryContents():
            return Contribution(kind, store_id, False, _history(contents))
        case TasksContents():
            return Contribution(kind, store_id, False, (PromptMessage("system", _tasks(contents), "tasks"),))
        case MemoriesContents():
            return Contribution(kind, store_id, False, (_memories(contents),))
        case SkillsContents():
            return Contribution(kind, store_id, False, _skills(contents))
    return Contribution(kind, store_id, True)


def _history(h: HistoryContents) -> tuple[PromptMessage, ...]:
    """The window is the prompt: system-prompt slot first, then thread, open views, pinned blocks (R4)."""
    out = [PromptMessage("system", h.system_prompt, "system_prompt")] if h.system_prompt_set else []
    out += [PromptMessage(m.role, m.content, "thread") for m in h.messages]
    out += [PromptMessage("system", f"[open view: {v.id}]\n{v.content}", "open_view") for v in h.open_views]
    out += [
        PromptMessage("system", f"[pinned: {p.id}]\n{p.content}", "pinned_block") for p in h.pinned_blocks
    ]
    return tuple(out)


def _tasks(t: TasksContents) -> str:
    """Always a message of its own, even when empty: the list an agent steers by (R5)."""
    if not t.tasks:
        return "Tasks: none yet. Create one with create_task."
    return "\n".join(["Tasks:", *(_task_line(task) for task in t.tasks)])


def _task_line(task: Task) -> str:
    line = f"- #{task.id} [{task.status.word}] {task.title}"
    if task.blocked_by:
        line += " (blocked by " + ", ".join(f"#{i}" for i in task.blocked_by) + ")"
    if task.description:
        line += "\n  " + task.description.replace("\n", "\n  ")
    return line


def _memories(m: MemoriesContents) -> PromptMessage:
    """The strategy decides: a scratchpad renders its pad, a markdown index its index, not bodies (R6)."""
    if m.strategy == MemoryStrategy.MARKDOWN_INDEX:
        lines = [f"- {e.name}: {e.index_line}" for e in m.entries]
        body = (
            "\n".join(["Memory index (read a file with read_memory_file):", *lines])
            if lines
            else "Memory index: empty."
        )
        return PromptMessage("system", body, "memory_index")
    pad = next((e.body for e in m.entries), "")
    return PromptMessage("system", f"Scratchpad:\n{pad}" if pad else "Scratchpad: empty.", "scratchpad")


def _skills(s: SkillsContents) -> tuple[PromptMessage, ...]:
    """The catalogue (names and descriptions), and bodies only for skills in the read set (R7)."""
    lines = [f"- {k.name}: {k.description}" for k in s.catalogue]
    catalogue = "\n".join(["Skills (load one with read_skill):", *lines]) if lines else "Skills: none."
    out = [PromptMessage("system", catalogue, "skills_catalogue")]
    bodies = {k.name: k.body for k in s.catalogue}
    out += [
        PromptMessage("system", f"[skill: {name}]\n{bodies[name]}", "skill_body")
        for name in s.read_set
        if name in bodies
    ]
    return tuple(out)
