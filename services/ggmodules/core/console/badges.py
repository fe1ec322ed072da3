"""The Agents view's reading of one profile's stores of one kind (R45) and the declared-versus-observed
notes (R46)."""

from __future__ import annotations

from ggmodules.core.console import reading
from ggmodules.core.console.fold import Folded
from ggmodules.core.console.state import Instance, Store
from ggmodules.core.console.views import Badge
from ggmodules.core.kinds import Kind
from ggmodules.core.vocabulary import MemoryScope, Origin


def badge(folded: Folded, profile: str, kind: Kind, stores: list[Store]) -> Badge:
    """How a profile's stores of a kind are distributed.

    run-global: the board, or every store reached through a spawner of another profile (R45);
    one store: agent-scoped when held at once (or bound as the profile's own), handed on when held one at
    a time by several (of any profile: the store reads the same on every grain), per instance when only
    one instance ever held it;
    several stores: split when at least one is genuinely shared, else per instance."""
    if kind == Kind.BOARD or all(_foreign(folded, profile, s) for s in stores):
        return Badge.RUN_GLOBAL
    if len(stores) == 1:
        store = stores[0]
        mine = [h for h in store.holders.values() if _profile(folded, h.agent_id) == profile]
        if reading.shared(store):
            return Badge.AGENT_SCOPED
        if reading.handed_on(store):
            return Badge.HANDED_ON
        if mine and mine[0].origin == Origin.PROFILE:
            return Badge.AGENT_SCOPED
        return Badge.PER_INSTANCE
    if any(reading.shared(s) for s in stores):
        return Badge.SPLIT
    return Badge.PER_INSTANCE


def _profile(folded: Folded, agent_id: str) -> str:
    inst = folded.instances.get(agent_id)
    return inst.profile if inst is not None else ""


def _foreign(folded: Folded, profile: str, store: Store) -> bool:
    """The store is owned by a spawner of another profile: an instance of this profile inherited it from a
    parent of another profile. Who spawned matters, not who held it first: a store that reached the profile
    by an exec from another profile and then spread by spawns inside it is the profile's own."""
    for held in store.holders.values():
        inst = folded.instances.get(held.agent_id)
        if inst is None or inst.profile != profile or held.origin != Origin.INHERITED:
            continue
        if inst.parent_agent_id and _profile(folded, inst.parent_agent_id) != profile:
            return True
    return False


def note(folded: Folded, instances: list[Instance], kind: Kind, stores: list[Store]) -> str:
    """Where the profile's declared memories scope and the observed distribution disagree (R46). Only
    for instances that reported rosters."""
    if kind != Kind.MEMORIES:
        return ""
    declared = {
        row.scope
        for inst in instances
        if (row := inst.declared(Kind.MEMORIES)) is not None and row.enabled
    }
    if len(declared) != 1:
        return ""
    scope = declared.pop()
    ids = ", ".join(s.store_id for s in stores)
    rostered = [i for i in instances if i.roster is not None]
    if scope == MemoryScope.INHERITED and len(stores) > 1 and len(rostered) > 1:
        mine = _ids(rostered)
        inherited = any(
            h.origin == Origin.INHERITED for s in stores for h in s.holders.values() if h.agent_id in mine
        )
        if not inherited:
            return (
                f"declared scope: inherited; observed: each instance got its own store ({ids}); "
                "likely cause: the instances were opened as roots, not spawned, so there was no parent "
                "store to inherit"
            )
    if scope == MemoryScope.AGENT and len(stores) > 1:
        return (
            f"declared scope: agent (one store for every instance); observed: {len(stores)} stores ({ids}); "
            f"likely cause: {_succession(folded, rostered, stores)}"
        )
    if scope == MemoryScope.INSTANCE:
        widest = [s for s in stores if reading.shared(s)]
        if widest:
            return (
                f"declared scope: instance (each instance its own); observed: {widest[0].store_id} shared by "
                f"{reading.link_count(widest[0])} at once; likely cause: "
                f"{_succession(folded, rostered, stores)}"
            )
    return ""


def _ids(instances: list[Instance]) -> set[str]:
    return {i.agent_id for i in instances}


def _succession(folded: Folded, instances: list[Instance], stores: list[Store]) -> str:
    """The successions that re-bound the profile's store mid-run, if any did."""
    mine = _ids(instances)
    carried = [
        h.agent_id
        for s in stores
        for h in s.holders.values()
        if h.agent_id in mine and (h.continues or h.origin == Origin.TRANSFERRED)
    ]
    causes = [reading.cause_of(folded, a) for a in carried]
    causes = [c for c in causes if c]
    if causes:
        return "a succession re-bound the profile's store mid-run (" + ", ".join(causes) + ")"
    return "the instances were bound to different stores by how they came about (fork, spawn or open)"
