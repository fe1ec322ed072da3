"""Copy rules (R11-R17): what fork and share mean per kind, applied when an instance binds its stores."""

from __future__ import annotations

from dataclasses import dataclass

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.history import HistoryState, forked_figures
from ggmodules.core.modules.memories import MemoriesState
from ggmodules.core.modules.states import KindState
from ggmodules.core.vocabulary import BindAction, Origin

_DEFAULT_ORIGIN = {
    BindAction.CREATE: Origin.CREATED,
    BindAction.SHARE: Origin.INHERITED,
    BindAction.FORK: Origin.FORKED,
    BindAction.NAMED: Origin.PROFILE,
}


@dataclass(frozen=True, slots=True)
class Resolved:
    """What a binding becomes once its kind's copy rule applies."""

    action: BindAction
    origin: Origin


def resolve(kind: Kind, action: BindAction, origin: Origin | None) -> Resolved:
    """The board is always shared (R14); a window is never shared (R15). Other requests stand; no origin
    (None or UNSPECIFIED) is the action's default."""
    if kind == Kind.BOARD and action == BindAction.FORK:
        return Resolved(BindAction.SHARE, Origin.RUN)
    if kind == Kind.HISTORY and action == BindAction.SHARE:
        return Resolved(BindAction.FORK, Origin.FORKED)
    if not origin:
        default = Origin.RUN if kind == Kind.BOARD and action == BindAction.NAMED else None
        return Resolved(action, default or _DEFAULT_ORIGIN.get(action, Origin.CREATED))
    return Resolved(action, origin)


def forked(state: KindState, figures: Figures, agent_id: str) -> tuple[KindState, Figures]:
    """A fork's state and figures: contents copied, counters carried forward (R11), the window's system
    prompt slot left empty (R24), memories re-stamped with the copy's agent id (R17). Figures keep the
    write count, which is monotonic too."""
    if isinstance(state, HistoryState):
        return state.forked(), forked_figures(figures, state)
    if isinstance(state, MemoriesState):
        return state.restamped(agent_id), figures
    return state, figures


def catalogue_key(directory: str) -> str:
    """The named store holding a skills directory's catalogue: one per directory key per run (R16)."""
    return f"skills/{directory}"
