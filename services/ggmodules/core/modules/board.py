"""board: issues with ids `PREFIX-N`, one counter per prefix. One board per run, always shared (R14)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from ggmodules.core.errors import InvalidArgument, NotFound, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.caps import check_caps
from ggmodules.core.modules.contents import BoardContents, Issue
from ggmodules.core.modules.figures import Figures, text_bytes
from ggmodules.core.modules.ops import CreateIssue, UpdateIssue
from ggmodules.core.modules.store import Applied, StoreHead
from ggmodules.core.modules.values import IssueStatus

BoardOp = CreateIssue | UpdateIssue
PREFIX = re.compile(r"[A-Z][A-Z0-9]{0,15}")


@dataclass(slots=True)
class BoardState:
    issues: dict[str, Issue] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "counters": self.counters,
            "issues": [[i.id, i.title, i.body, int(i.status)] for i in self.issues.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BoardState:
        issues = {i[0]: Issue(i[0], i[1], i[2], IssueStatus(i[3])) for i in data.get("issues", [])}
        return cls(issues, {str(k): int(v) for k, v in data.get("counters", {}).items()})

    def copy(self) -> BoardState:
        return BoardState(dict(self.issues), dict(self.counters))

    def figures(self, writes: int) -> Figures:
        return Figures(
            len(self.issues), sum(text_bytes(i.title, i.body) for i in self.issues.values()), writes
        )

    def contents(self) -> BoardContents:
        return BoardContents(tuple(self.issues.values()), tuple(self.counters.items()))


def apply(head: StoreHead, state: BoardState, op: BoardOp) -> Applied:
    new = state.copy()
    issue_id = ""
    match op:
        case CreateIssue(prefix=prefix, title=title, body=body):
            if not PREFIX.fullmatch(prefix):
                raise InvalidArgument(
                    f"prefix {prefix!r} must be 1-16 capitals or digits, starting with a letter (e.g. ABC)",
                    metadata={"field": "prefix"},
                    violations=[("prefix", "malformed")],
                )
            n = new.counters.get(prefix, 0) + 1
            new.counters[prefix] = n
            issue_id = f"{prefix}-{n}"
            new.issues[issue_id] = Issue(issue_id, title, body, IssueStatus.OPEN)
        case UpdateIssue(issue_id=iid, status=status, body=body):
            issue = new.issues.get(iid)
            if issue is None:
                raise NotFound(
                    f"no issue {iid!r} on this board", reason=Reason.ENTRY_NOT_FOUND, metadata={"entry": iid}
                )
            new.issues[iid] = replace(issue, status=status or issue.status, body=body or issue.body)
            issue_id = iid
    before, after = head.figures, new.figures(head.figures.writes)
    check_caps(Kind.BOARD, head.caps, (before.items, after.items), (before.bytes, after.bytes))
    return Applied(replace(head, figures=after), new.contents(), state=new, issue_id=issue_id)
