"""Profiles: per kind on/off and how each enabled kind is configured (R1, R2).

A profile names kinds by their words. History is always on; the board is the run's, switched per run.
Validation turns what a client wrote into `Profile`s holding only the enabled kinds, defaults filled in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ggmodules.core.errors import InvalidArgument, Reason, missing
from ggmodules.core.kinds import Kind, kind_from_word
from ggmodules.core.roster import Caps
from ggmodules.core.vocabulary import MemoryScope, MemoryStrategy

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_DIRECTORY_CHARS = 256
E = TypeVar("E", MemoryStrategy, MemoryScope)


@dataclass(frozen=True)
class ModuleInput:
    """One kind's configuration as a client wrote it (enum fields as raw numbers)."""

    enabled: bool = False
    strategy: int = 0
    scope: int = 0
    read_only: bool = False
    max_items: int = 0
    max_bytes: int = 0
    skills_directory: str = ""


@dataclass(frozen=True)
class ProfileInput:
    name: str
    modules: Mapping[str, ModuleInput] = field(default_factory=dict)


@dataclass(frozen=True)
class ModuleSpec:
    """An enabled kind of a validated profile."""

    kind: Kind
    read_only: bool = False
    caps: Caps = field(default_factory=Caps)
    # Memories only.
    strategy: MemoryStrategy = MemoryStrategy.UNSPECIFIED
    scope: MemoryScope = MemoryScope.UNSPECIFIED
    # Skills only: the catalogue's directory key.
    skills_directory: str = ""

    @property
    def may_write(self) -> bool:
        return not self.read_only


@dataclass(frozen=True)
class Profile:
    name: str
    # Enabled kinds only, in kind order; history is always present.
    modules: Mapping[Kind, ModuleSpec]

    def holds(self, kind: Kind) -> bool:
        return kind in self.modules

    def module(self, kind: Kind) -> ModuleSpec | None:
        return self.modules.get(kind)


def validate_profiles(inputs: Sequence[ProfileInput]) -> tuple[Profile, ...]:
    """The run's profiles, validated; the first problem found is refused."""
    if not inputs:
        raise InvalidArgument(
            "profiles: a run needs at least one profile", metadata={"field": "profiles"},
            violations=[("profiles", "at least one profile is required")],
        )
    seen: set[str] = set()
    profiles = []
    for i, given in enumerate(inputs):
        where = f"profiles[{i}]"
        check_name(given.name, f"{where}.name", "profile")
        if given.name in seen:
            raise InvalidArgument(
                f"{where}.name: profile {given.name!r} is configured twice; give each profile its own name",
                metadata={"field": f"{where}.name", "value": given.name},
                violations=[(f"{where}.name", "named twice")],
            )
        seen.add(given.name)
        profiles.append(validate_profile(given, where))
    return tuple(profiles)


def validate_profile(given: ProfileInput, where: str = "profile") -> Profile:
    specs: dict[Kind, ModuleSpec] = {}
    for word in sorted(given.modules):
        config = given.modules[word]
        at = f'{where}.modules["{word}"]'
        if word == Kind.BOARD.word:
            raise InvalidArgument(
                f"{at}: the board is the run's, not a profile's; turn it on with the run's board switch "
                "(CreateRunRequest.board_enabled) and every agent of the run holds it",
                metadata={"field": at, "value": word},
                violations=[(at, "the board is configured per run: use board_enabled")],
            )
        kind = kind_from_word(word, field=at)
        if kind is Kind.HISTORY and not config.enabled:
            raise InvalidArgument(
                f"{at}: history cannot be turned off; every instance holds its window "
                "(set enabled: true or leave history out)",
                reason=Reason.HISTORY_REQUIRED,
                metadata={"field": f"{at}.enabled"},
                violations=[(f"{at}.enabled", "history is always on")],
            )
        if config.enabled:
            specs[kind] = _module_spec(kind, config, at, given.name)
    specs.setdefault(Kind.HISTORY, ModuleSpec(Kind.HISTORY))
    return Profile(given.name, {k: specs[k] for k in Kind if k in specs})


def _module_spec(kind: Kind, config: ModuleInput, at: str, profile: str) -> ModuleSpec:
    if config.max_items < 0 or config.max_bytes < 0:
        raise _bad(f"{at}.caps", "caps count from zero (zero means unlimited); a negative cap means nothing")
    caps = Caps(config.max_items, config.max_bytes)
    if kind is not Kind.MEMORIES and (config.strategy or config.scope):
        raise _bad(f"{at}", "strategy and scope configure memories only; leave them unset for other kinds")
    if kind is not Kind.SKILLS and config.skills_directory:
        raise _bad(f"{at}.skills_directory", "a skills directory configures skills only")
    if kind is Kind.MEMORIES:
        strategy = _enum(MemoryStrategy, config.strategy, f"{at}.strategy") or MemoryStrategy.SCRATCHPAD
        scope = _enum(MemoryScope, config.scope, f"{at}.scope") or MemoryScope.INSTANCE
        return ModuleSpec(kind, config.read_only, caps, strategy=strategy, scope=scope)
    if kind is Kind.SKILLS:
        directory = config.skills_directory or profile
        if len(directory) > MAX_DIRECTORY_CHARS or directory != directory.strip():
            raise _bad(
                f"{at}.skills_directory",
                f"a directory key is at most {MAX_DIRECTORY_CHARS} characters, without surrounding spaces",
            )
        return ModuleSpec(kind, config.read_only, caps, skills_directory=directory)
    return ModuleSpec(kind, config.read_only, caps)


def _enum(enum_type: type[E], value: int, at: str) -> E:
    try:
        return enum_type(value)
    except ValueError:
        valid = ", ".join(m.name.lower() for m in enum_type if m.value)
        raise _bad(at, f"{value} is not a known value; use one of {valid}") from None


def check_name(name: str, at: str, what: str) -> None:
    if not name:
        raise missing(at)
    if not NAME_PATTERN.fullmatch(name):
        raise _bad(
            at,
            f"{what} name {name!r} must be 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit",
        )


def _bad(at: str, why: str) -> InvalidArgument:
    return InvalidArgument(f"{at}: {why}", metadata={"field": at}, violations=[(at, why)])
