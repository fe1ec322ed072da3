"""How much one ModuleStore read answers. `page_size` 0 asks for the default page, never for everything;
a larger page_size than the maximum gets the maximum; a negative one is refused INVALID_ARGUMENT
(INVALID_FIELD, `field` page_size), as Registry's lists refuse it (core/registry/paging.py). A position to
read after (GetStore's after_seq, ReadOutbox's and WatchOutbox's after_origin_seq) is 0 or more, as
Telemetry's after_cursor is (core/telemetry/streams.py): a negative one is refused the same way (`after`).

| read | what is paged | default | maximum |
|---|---|---|---|
| GetStore | a history's messages, an archive's threads (after `after_seq`) | 1,000 | 1,000 |
| ListStores | stores | 100 | 1,000 |
| SearchArchive | ranked hits (core/modules/archive_search.py) | 20 | 100 |
| ReadOutbox | events, at most 1 MiB of them unless the first alone is larger (outbox.py) | 100 | 1,000 |

Beside the counts, no answer may exceed one message (16 MiB): the call interceptor refuses a larger one
TOO_LARGE, and a store's size limit (caps.py) keeps a full page of one store well below that.
"""

from __future__ import annotations

from dataclasses import dataclass

from ggmodules.core.errors import InvalidArgument


@dataclass(frozen=True, slots=True)
class Page:
    default: int
    maximum: int

    def size(self, requested: int) -> int:
        if requested < 0:
            raise InvalidArgument(
                "page_size cannot be negative (0 means the default)",
                metadata={"field": "page_size"},
                violations=[("page_size", "negative")],
            )
        return min(requested, self.maximum) if requested > 0 else self.default


def after(field: str, position: int, zero: str = "read from the start") -> int:
    """`position` (exclusive; 0 = from the start, `zero` says so in the refusal), refused when negative."""
    if position < 0:
        raise InvalidArgument(
            f"{field} {position} is negative; use 0 to {zero}",
            metadata={"field": field},
            violations=[(field, "must be >= 0")],
        )
    return position


STORE_CONTENTS = Page(1000, 1000)
STORES = Page(100, 1000)
ARCHIVE_SEARCH = Page(20, 100)
OUTBOX = Page(100, 1000)
