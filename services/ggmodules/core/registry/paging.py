"""Page sizes and opaque page tokens for List calls. A token names what it pages (`scope`) and the last
position handed out, so a token from another list is refused rather than misread."""

from __future__ import annotations

import base64
import binascii

from ggmodules.core.errors import InvalidArgument, Reason

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
# Positions are 64-bit; a token naming one beyond was not handed out by a list.
MAX_POSITION = 2**63 - 1


def page_size(requested: int) -> int:
    if requested < 0:
        raise InvalidArgument(
            "page_size cannot be negative (0 means the default)",
            metadata={"field": "page_size"}, violations=[("page_size", "negative")],
        )
    return min(requested or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def encode_token(scope: str, after: int) -> str:
    return base64.urlsafe_b64encode(f"{scope}|{after}".encode()).decode().rstrip("=")


def decode_token(token: str, scope: str) -> int:
    """The position after which the next page starts; 0 for the first page."""
    if not token:
        return 0
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        given_scope, after = text.rsplit("|", 1)
        if given_scope == scope and after.isdigit() and int(after) <= MAX_POSITION:
            return int(after)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidArgument(
        "page_token was not handed out by this list; pass the next_page_token of the previous page, "
        "or none for the first page",
        reason=Reason.INVALID_PAGE_TOKEN,
        metadata={"field": "page_token"},
    )
