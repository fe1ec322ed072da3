"""skills, copied in halves (R16): a catalogue per directory key, shared by every holder naming that
directory, and a read set per window (the skills whose bodies are pinned), which a fork copies and a share
aliases.

Store figures count the catalogue; a holder's figures count its read set as items, as its caps do.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ggmodules.core.errors import NotFound, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.caps import check_caps
from ggmodules.core.modules.contents import Skill, SkillsContents
from ggmodules.core.modules.figures import Figures, text_bytes
from ggmodules.core.modules.ops import PutSkill, ReadSkill
from ggmodules.core.modules.store import Applied, StoreHead

SkillsOp = PutSkill | ReadSkill


@dataclass(slots=True)
class SkillsState:
    """The catalogue half."""

    catalogue: dict[str, Skill] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"skills": [[s.name, s.description, s.body] for s in self.catalogue.values()]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SkillsState:
        return cls({s[0]: Skill(*s) for s in data.get("skills", [])})

    def figures(self, writes: int) -> Figures:
        return Figures(
            len(self.catalogue),
            sum(text_bytes(s.name, s.description, s.body) for s in self.catalogue.values()),
            writes,
        )

    def contents(self, directory: str, read_set: tuple[str, ...]) -> SkillsContents:
        return SkillsContents(directory, tuple(self.catalogue.values()), read_set)


def holder_figures(store: Figures, read_set: tuple[str, ...]) -> Figures:
    return replace(store, items=len(read_set))


def apply(head: StoreHead, state: SkillsState, read_set: tuple[str, ...], op: SkillsOp) -> Applied:
    before = head.figures
    match op:
        case PutSkill(name=name, description=description, body=body):
            new = SkillsState(dict(state.catalogue))
            new.catalogue[name] = Skill(name, description, body)
            after = new.figures(before.writes)
            check_caps(Kind.SKILLS, head.caps, (0, 0), (before.bytes, after.bytes))
            return Applied(replace(head, figures=after), new.contents(head.directory, read_set), state=new)
        case ReadSkill(name=name):
            if name not in state.catalogue:
                raise NotFound(
                    f"no skill {name!r} in the {head.directory!r} catalogue",
                    reason=Reason.ENTRY_NOT_FOUND,
                    metadata={"entry": name},
                )
            new_set = read_set if name in read_set else (*read_set, name)
            check_caps(Kind.SKILLS, head.caps, (len(read_set), len(new_set)), (0, 0))
            return Applied(head, state.contents(head.directory, new_set), read_set=new_set)
