"""Ids, request ids and page tokens: one rule for every service, checked before anything reaches a database.

- an id: every string field named `*_id` (run, agent, store, transfer, view, block, issue ids), and
  `profile`, `fsm_state`, `to_state`, `named_key`: at most MAX_ID_CHARS (128) characters;
- a request id (`request_id`): at most MAX_REQUEST_ID_CHARS (128);
- a page token (`page_token`): at most MAX_PAGE_TOKEN_CHARS (128), refused INVALID_PAGE_TOKEN.

Each is one line of printable characters (`str.isprintable`): no NUL, no control characters, no line or
paragraph separators; anything else Unicode calls printable is allowed. An empty value means "not given";
whether a field is required is the operation's business. The ids the services mint themselves (`run-…`,
`<profile>-<n>`, `history-<n>`, `transfer-…`, and the request ids derived from them) stay well inside these
limits. The refusal names the field and what is wrong, never the value (it may be as large as the request).
"""

from __future__ import annotations

from ggmodules.core.errors import InvalidArgument, Reason

MAX_ID_CHARS = 128
MAX_REQUEST_ID_CHARS = 128
MAX_PAGE_TOKEN_CHARS = 128


def check_id(
    field: str, value: str, *, limit: int = MAX_ID_CHARS, reason: Reason = Reason.INVALID_FIELD
) -> None:
    """Refuses a value longer than `limit` characters or holding a character that is not printable."""
    if len(value) > limit:
        _refuse(field, f"is {len(value)} characters long; the limit is {limit}", limit, reason)
    if not value.isprintable():
        at = next(i for i, ch in enumerate(value) if not ch.isprintable())
        _refuse(
            field,
            f"holds a character that is not printable (U+{ord(value[at]):04X} at position {at}); "
            "it must be one line of printable characters, without NUL or control characters",
            limit,
            reason,
        )


def _refuse(field: str, what: str, limit: int, reason: Reason) -> None:
    raise InvalidArgument(
        f"{field} {what}",
        reason=reason,
        metadata={"field": field, "limit": str(limit)},
        violations=[(field, what)],
    )
