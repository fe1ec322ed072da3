"""`make bench`: latency and throughput figures, each beside a no-op unary RPC of the same run.

Every service runs as its own OS process on this machine, as in production (Transfer with Registry and
ModuleStore beside it, each on its own SQLite file). The no-op is the standard health Check of the same
grpc.aio server, called through the same kind of channel, so the difference is what the service itself
adds. Figures only: nothing here passes or fails. `--only transfer` (or `modulestore`, `telemetry`,
`telemetry-postgres`, `telemetry-jetstream`, `archive`, `growth`, `growth-postgres`, `fanout`, `auth`,
`latency`, `session`, `writes`, `store-size`) prints one section. Every service runs with auth on (the
harness's keys); `auth` sets append through the credential check beside append on a --insecure-dev
ModuleStore.

Each section is a module of tests/bench with a `figures(quick)` that prints it; `SECTIONS` below names them in
the order a full run prints them. A new section: a module tests/bench/<name>.py and one line in SECTIONS.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from tests.bench import (
    archive,
    auth,
    fanout,
    growth,
    latency,
    modulestore,
    session,
    store_size,
    telemetry,
    transfer,
    writes,
)

# --only name -> the function that prints the section (argument: quick), in the order a full run prints them.
SECTIONS: dict[str, Callable[[bool], None]] = {
    "modulestore": modulestore.figures,
    "auth": auth.figures,
    "transfer": transfer.figures,
    "telemetry": telemetry.figures,
    "telemetry-postgres": telemetry.postgres_figures,
    "telemetry-jetstream": telemetry.jetstream_figures,
    "archive": archive.figures,
    "growth": growth.figures,
    "growth-postgres": growth.postgres_figures,
    "fanout": fanout.figures,
    "latency": latency.figures,
    "session": session.figures,
    "writes": writes.figures,
    "store-size": store_size.figures,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer samples, for a smoke run")
    parser.add_argument("--only", choices=list(SECTIONS), help="one section of figures")
    args = parser.parse_args()
    for name, figures in SECTIONS.items():
        if args.only in (None, name):
            figures(args.quick)


if __name__ == "__main__":
    main()
