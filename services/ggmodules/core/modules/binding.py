"""ModuleStore's check of a BindInstance plan (`ggmodules.core.roster.BindPlan`) before anything is bound."""

from __future__ import annotations

from ggmodules.core.errors import InvalidArgument, Reason, missing
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.limits import check_name
from ggmodules.core.roster import BindPlan
from ggmodules.core.vocabulary import BindAction


def check_plan(plan: BindPlan) -> None:
    """Every binding well-formed, each kind at most once, history bound (R2)."""
    check_name("run_id", plan.run_id)
    check_name("agent_id", plan.agent_id)
    # The cause is a word of the vocabulary by construction (wire refuses any other).
    for name, value in (("profile", plan.profile), ("parent_agent_id", plan.parent_agent_id)):
        check_name(name, value, required=False)
    seen: set[Kind] = set()
    for i, b in enumerate(plan.bindings):
        field = f"bindings[{i}]"
        if b.kind in seen:
            raise InvalidArgument(
                f"{field}: {b.kind.word} is bound twice; name each kind once",
                metadata={"field": field},
                violations=[(field, "duplicate kind")],
            )
        seen.add(b.kind)
        for name, value in (
            ("source_store_id", b.source_store_id),
            ("named_key", b.named_key),
            ("skills_directory", b.skills_directory),
            ("read_set_source_agent_id", b.read_set_source_agent_id),
        ):
            check_name(f"{field}.{name}", value, required=False)
        if (
            b.action in (BindAction.SHARE, BindAction.FORK)
            and not b.source_store_id
            and b.kind != Kind.SKILLS
        ):
            raise missing(f"{field}.source_store_id")
        if b.action == BindAction.NAMED and not b.named_key and b.kind != Kind.SKILLS:
            raise missing(f"{field}.named_key")
        if (
            b.kind == Kind.SKILLS
            and b.action in (BindAction.CREATE, BindAction.NAMED)
            and not (b.skills_directory or b.named_key)
        ):
            raise missing(f"{field}.skills_directory")
        if (
            b.kind == Kind.SKILLS
            and b.action in (BindAction.SHARE, BindAction.FORK)
            and not (b.source_store_id and b.read_set_source_agent_id)
        ):
            raise missing(f"{field}.source_store_id and read_set_source_agent_id")
    history = plan.binding(Kind.HISTORY)
    if history is None or history.action == BindAction.DISABLED:
        raise InvalidArgument(
            "every instance holds a history module (R2); bind history with CREATE or FORK",
            reason=Reason.HISTORY_REQUIRED,
            metadata={"field": "bindings"},
        )
