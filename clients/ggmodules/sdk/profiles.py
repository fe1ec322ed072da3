"""How a run is configured: profiles (one switch per kind) and an optional FSM.

    Profile("planner", memories=Memories(strategy="scratchpad", scope="agent"), tasks=True,
            skills="planning", archive=True)

A kind is on when its field is `True` or a config object, off when `False`. History is always on (R2);
`history=False` is sent as written so the service's refusal is what you see. `modules` names any other
kind word as written (again, the service's R1 refusal answers a word that is not a kind). The board is
switched per run (`create_run(..., board=True)`), not per profile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field

from ggmodules.sdk.words import MemoryScope, MemoryStrategy


@dataclass(frozen=True, kw_only=True)
class Capability:
    """A module-backed capability: read access and caps (zero means unlimited)."""

    read_only: bool = False
    max_items: int = 0
    max_bytes: int = 0


@dataclass(frozen=True, kw_only=True)
class Memories(Capability):
    """`scope`: `instance` (each instance its own), `agent` (one per profile), `inherited` (a subagent
    shares its spawner's)."""

    strategy: MemoryStrategy | str = MemoryStrategy.SCRATCHPAD
    scope: MemoryScope | str = MemoryScope.INSTANCE


@dataclass(frozen=True, kw_only=True)
class Skills(Capability):
    """`directory`: the catalogue's key; profiles naming one directory share one catalogue (R16).
    Empty means the service's default (the profile's name)."""

    directory: str = ""


@dataclass(frozen=True)
class Profile:
    name: str
    _: KW_ONLY
    history: Capability | bool = True
    memories: Memories | bool = False
    tasks: Capability | bool = False
    # A string is the catalogue's directory key.
    skills: Skills | str | bool = False
    archive: Capability | bool = False
    # Any other kind word, sent as written.
    modules: Mapping[str, Capability | bool] = field(default_factory=dict)

    def capabilities(self) -> dict[str, Capability | bool]:
        """Every kind word this profile names, with its setting (`False` only where it must be sent)."""
        named: dict[str, Capability | bool] = {"history": self.history}
        skills = Skills(directory=self.skills) if isinstance(self.skills, str) else self.skills
        for word, setting in (("memories", self.memories), ("tasks", self.tasks), ("skills", skills),
                              ("archive", self.archive)):
            if setting is not False:
                named[word] = setting
        named.update(self.modules)
        return named


@dataclass(frozen=True)
class Edge:
    """An FSM edge; `carry` names the kinds it hands on (R19), as words."""

    source: str
    target: str
    carry: Sequence[str] = ()


@dataclass(frozen=True)
class Fsm:
    """`states` maps each state to the profile it runs."""

    initial: str
    states: Mapping[str, str]
    edges: Sequence[Edge] = ()
