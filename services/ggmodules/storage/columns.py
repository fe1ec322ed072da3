"""Column types every service's tables share."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Integer
from sqlmodel import Field

# Sequences, cursors, counters and anything a request may name by number: 64-bit, so a value above 2^31
# is stored or compared, never refused by the database ("integer out of range"). BIGINT on PostgreSQL;
# INTEGER on SQLite, whose integers are 64-bit already and where only `INTEGER PRIMARY KEY` is the rowid
# alias that numbers rows itself.
SEQ = BigInteger().with_variant(Integer(), "sqlite")


def seq_field(default: Any = 0, **kwargs: Any) -> Any:
    """A 64-bit integer column (see SEQ)."""
    return Field(default=default, sa_type=SEQ, **kwargs)
