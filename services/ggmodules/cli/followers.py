"""`ggmodules followers [SERVICE ...] [--database-url URL] [--forget NAME]`: the followers of each outbox
(ModuleStore's and Registry's; default both), each at the URL its service's config names
(`GGMODULES_<SERVICE>_DATABASE_URL`, then `GGMODULES_DATABASE_URL`) unless `--database-url` is given.

An outbox is pruned only below the lowest position any follower acknowledged (storage/outbox_pruning.py), so
a follower that stopped for good (a consumer retired, a log replaced under another name) holds every later
event back and the outbox grows without bound. This lists each follower's position, how far it is behind
the outbox's newest event, and which one holds pruning back; `--forget NAME` removes that follower's
position, so pruning follows the others from the next pass. A forgotten follower that comes back is
answered OUT_OF_RANGE OUTBOX_PRUNED for what was pruned meanwhile (told, never skipped silently), and its
next AckOutbox records it again. Forgetting the last follower stops pruning until one acknowledges again.
Safe while replicas serve: each is one short transaction."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sqlalchemy import Table, func, inspect, select
from sqlalchemy.engine import Connection

from ggmodules.runtime.config import ServiceConfig
from ggmodules.storage.engine import make_engine
from ggmodules.storage.modulestore.tables import MsOutbox, MsOutboxPosition
from ggmodules.storage.outbox_pruning import followers_in, forget_follower, pruned_through_in
from ggmodules.storage.registry.tables import RegOutboxPositionRow, RegOutboxRow

# service -> (its outbox's rows, its followers' positions)
OUTBOXES: dict[str, tuple[Table, Table]] = {
    "modulestore": (MsOutbox.__table__, MsOutboxPosition.__table__),  # type: ignore[attr-defined]
    "registry": (RegOutboxRow.__table__, RegOutboxPositionRow.__table__),  # type: ignore[attr-defined]
}


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="ggmodules followers", description=__doc__)
    parser.add_argument("services", nargs="*", metavar="SERVICE",
                        help=f"one of {', '.join(OUTBOXES)} (default: both)")
    parser.add_argument("--database-url", help="the database of every service named")
    parser.add_argument("--forget", metavar="NAME", help="remove this follower's position")
    args = parser.parse_args(list(argv))
    names = args.services or list(OUTBOXES)
    if unknown := [n for n in names if n not in OUTBOXES]:
        parser.error(f"unknown service {unknown[0]!r}; the outboxes with followers are {', '.join(OUTBOXES)}")
    forgotten = 0
    for name in names:
        flags = ["--database-url", args.database_url] if args.database_url else []
        engine = make_engine(ServiceConfig.load(name, flags).database_url, pool_size=1, max_overflow=0)
        try:
            with engine.begin() as conn:
                rows, positions = OUTBOXES[name]
                if not inspect(conn).has_table(positions.name):
                    print(f"{name}: no tables here yet (the service has not started on this database, or "
                          "run `ggmodules migrate`)")
                    continue
                if args.forget is not None:
                    gone = forget_follower(conn, positions, args.forget)
                    forgotten += gone is not None
                    said = "not a follower here" if gone is None else f"forgotten (it stood at {gone})"
                    print(f"{name}: follower {args.forget!r} {said}")
                print(describe(name, conn, rows, positions))
        finally:
            engine.dispose()
    if args.forget is not None and not forgotten:
        print(f"ggmodules followers: no outbox named has a follower {args.forget!r}", file=sys.stderr)
        return 1
    return 0


def describe(service: str, conn: Connection, rows: Table, positions: Table) -> str:
    """The outbox's newest event, how far it is pruned, and each follower, the one holding pruning marked."""
    newest = int(conn.execute(select(func.max(rows.c.origin_seq))).scalar() or 0)
    followers = followers_in(conn, positions)
    pruned = pruned_through_in(conn, positions)
    lines = [f"{service}: newest event {newest}, pruned through {pruned}, {len(followers)} follower(s)"]
    lowest = min(followers.values(), default=None)
    for follower, at in sorted(followers.items(), key=lambda kv: (kv[1], kv[0])):
        holds = "  <- holds pruning back" if at == lowest and len(followers) > 1 else ""
        lines.append(f"  {follower:<24} at {at:>12}  ({max(newest - at, 0)} behind){holds}")
    return "\n".join(lines)
