"""The successor's opening note: what arrived, and a sentence for each kind that did not simply arrive.

e.g. "history, tasks and board arrived from planner-0; memories were re-initialized: planner-0 kept a
scratchpad and profile coder keeps a markdown index, and a scratchpad cannot be read as a markdown index;
archive is new."
"""

from __future__ import annotations

from collections.abc import Sequence

from ggmodules.core.kinds import Kind
from ggmodules.core.vocabulary import MemoryStrategy

_PLURAL = {Kind.MEMORIES, Kind.TASKS, Kind.SKILLS}
_STRATEGY = {MemoryStrategy.SCRATCHPAD: "a scratchpad", MemoryStrategy.MARKDOWN_INDEX: "a markdown index"}


def listing(words: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _it(kind: Kind) -> str:
    return "them" if kind in _PLURAL else "it"


def _was(kind: Kind) -> str:
    return "were" if kind in _PLURAL else "was"


def _is(kind: Kind) -> str:
    return "are" if kind in _PLURAL else "is"


def _starts(kind: Kind) -> str:
    return "start" if kind in _PLURAL else "starts"


class Notes:
    def __init__(self, predecessor: str, profile: str, target_state: str) -> None:
        self.predecessor = predecessor
        self.profile = profile
        # Set for a transition: the state the edge leads to.
        self.target_state = target_state

    def reinitialized(self, had: MemoryStrategy, wants: MemoryStrategy) -> str:
        a, b = _STRATEGY.get(had, "another strategy"), _STRATEGY.get(wants, "this strategy")
        return (
            f"memories were re-initialized: {self.predecessor} kept {a} and profile {self.profile} "
            f"keeps {b}, and {a} cannot be read as {b}"
        )

    def fresh(self, kind: Kind, store_before: str) -> str:
        if store_before and self.target_state:
            return (
                f"{kind.word} {_starts(kind)} fresh: "
                f"the transition to {self.target_state} does not carry {_it(kind)}"
            )
        return f"{kind.word} {_is(kind)} new"

    def dropped(self, kind: Kind, on_carry_list: bool) -> str:
        if self.target_state and not on_carry_list:
            why = f"the transition to {self.target_state} does not carry {_it(kind)}"
        else:
            why = f"profile {self.profile} does not enable {_it(kind)}"
        return f"{kind.word} {_was(kind)} dropped: {why}"

    def repointed_memories(self) -> str:
        return (
            f"memories now come from profile {self.profile}'s own store, shared by every {self.profile} agent"
        )

    def repointed_skills(self, directory: str) -> str:
        return f"skills now come from the {directory!r} catalogue of profile {self.profile}"

    def opening(self, arrived: Sequence[Kind], notes: Sequence[str]) -> str:
        """The whole note: the kinds carried as they were, then each other kind's sentence (`notes`)."""
        words = [k.word for k in arrived]
        sentences = [f"{listing(words)} arrived from {self.predecessor}"] if words else []
        sentences += [n for n in notes if n]
        if not sentences:
            return ""
        return "; ".join(sentences) + "."
