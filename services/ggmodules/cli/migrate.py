"""`ggmodules migrate [SERVICE ...] [--database-url URL]`: brings each service's tables to the newest
revision without starting it (default: all four), each at the URL its own config names
(`GGMODULES_<SERVICE>_DATABASE_URL`, then `GGMODULES_DATABASE_URL`) unless `--database-url` is given.
Safe to run while replicas start or serve: migrations take a per-service lock (storage.migrations)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ggmodules.runtime.config import ServiceConfig
from ggmodules.storage.engine import make_engine
from ggmodules.storage.migrations import SERVICES, head_revision, migrate


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="ggmodules migrate", description=__doc__)
    parser.add_argument("services", nargs="*", metavar="SERVICE",
                        help=f"one of {', '.join(SERVICES)} (default: all)")
    parser.add_argument("--database-url", help="the database of every service named")
    args = parser.parse_args(list(argv))
    names = args.services or list(SERVICES)
    if unknown := [n for n in names if n not in SERVICES]:
        parser.error(f"unknown service {unknown[0]!r}; choose from {', '.join(SERVICES)}")
    for name in names:
        flags = ["--database-url", args.database_url] if args.database_url else []
        config = ServiceConfig.load(name, flags)
        engine = make_engine(config.database_url, pool_size=1, max_overflow=0)
        try:
            before = migrate(engine, name)
            after = head_revision(engine, name)
        finally:
            engine.dispose()
        print(f"migrated {name}: {before or '(empty)'} -> {after}", flush=True)
    return 0
