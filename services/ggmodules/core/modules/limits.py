"""Field checks shared by every operation: required fields and the size of any single text."""

from __future__ import annotations

from ggmodules.core.errors import InvalidArgument, Reason, missing

# Any single text field (message content, body, prompt) larger than this is refused.
MAX_TEXT_BYTES = 256 * 1024


def check_text(field: str, text: str, *, required: bool = False) -> None:
    if required and not text:
        raise missing(field)
    if "\x00" in text:
        raise _malformed(field, "must not contain NUL characters")
    # Cheap bound first: a str of n chars encodes to at most 4n bytes.
    if len(text) * 4 > MAX_TEXT_BYTES and len(text.encode()) > MAX_TEXT_BYTES:
        raise InvalidArgument(
            f"{field} is {len(text.encode())} bytes; the limit for one text is {MAX_TEXT_BYTES} bytes. "
            "Split it or store less",
            reason=Reason.TOO_LARGE,
            metadata={"field": field, "limit": str(MAX_TEXT_BYTES)},
            violations=[(field, f"larger than {MAX_TEXT_BYTES} bytes")],
        )


def check_name(field: str, name: str, *, max_len: int = 200, required: bool = True) -> None:
    """Names and ids: one line of printable text, at most `max_len` characters."""
    if not name:
        if required:
            raise missing(field)
        return
    if len(name) > max_len or not name.isprintable():
        raise _malformed(field, f"must be one line of at most {max_len} printable characters")


def _malformed(field: str, what: str) -> InvalidArgument:
    return InvalidArgument(f"{field} {what}", metadata={"field": field}, violations=[(field, what)])
