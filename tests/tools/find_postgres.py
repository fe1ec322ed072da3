"""Prints the PostgreSQL URL `make test` gives the tests: GGMODULES_TEST_POSTGRES_URL when set, else the local
server at 127.0.0.1:5432 (user postgres, no password) when it answers, else nothing, and the tests then report
every PostgreSQL case as skipped."""

from __future__ import annotations

import os
import sys

import psycopg

LOCAL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def main() -> int:
    given = os.environ.get("GGMODULES_TEST_POSTGRES_URL", "")
    if given:
        print(given)
        return 0
    try:
        psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", connect_timeout=2).close()
    except psycopg.Error:
        return 0
    print(LOCAL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
