"""The six kinds (R1) and the closed vocabulary that names them."""

from __future__ import annotations

import enum

from ggmodules.core.errors import InvalidArgument, Reason


class Kind(enum.IntEnum):
    """Kind values match `ggmodules.common.v1.Kind` numbers; iteration order is kind order."""

    HISTORY = 1
    MEMORIES = 2
    TASKS = 3
    BOARD = 4
    SKILLS = 5
    ARCHIVE = 6

    @property
    def word(self) -> str:
        return self.name.lower()


KIND_WORDS: tuple[str, ...] = tuple(k.word for k in Kind)
_BY_WORD = {k.word: k for k in Kind}


class UnknownKind(InvalidArgument):
    """A word or number that names none of the six kinds."""

    def __init__(self, word: str, *, field: str = "kind") -> None:
        valid = ", ".join(KIND_WORDS)
        super().__init__(
            f"{field}: {word!r} is not a kind; the six kinds are {valid}",
            reason=Reason.UNKNOWN_KIND,
            metadata={"field": field, "value": word, "valid": valid},
            violations=[(field, f"{word!r} is not one of {valid}")],
        )


def kind_from_word(word: str, *, field: str = "kind") -> Kind:
    """The kind a word names; any other word is refused naming it and the six valid ones."""
    kind = _BY_WORD.get(word)
    if kind is None:
        raise UnknownKind(word, field=field)
    return kind


def kind_from_value(value: int, *, field: str = "kind") -> Kind:
    """The kind an enum number names; UNSPECIFIED and unknown numbers are refused."""
    try:
        return Kind(value)
    except ValueError:
        raise UnknownKind(str(value), field=field) from None
