"""A service's engine, built from its config: the URL and the pool it may hold (`--pool-size`,
`--pool-max-overflow`). On PostgreSQL it logs how many replicas of this pool the server admits, so an
operator adding replicas sees when PgBouncer has to go in front of the server."""

from __future__ import annotations

import structlog
from sqlalchemy.engine import Engine

from ggmodules.runtime.config import ServiceConfig
from ggmodules.storage.contention import first_line
from ggmodules.storage.engine import make_engine, pool_capacity


def open_engine(config: ServiceConfig, log: structlog.typing.FilteringBoundLogger) -> Engine:
    engine = make_engine(config.database_url, config.pool_size, config.pool_max_overflow,
                         listen_url=config.listen_database_url)
    try:
        capacity = pool_capacity(engine, config.pool_size, config.pool_max_overflow)
    except Exception as err:  # the database is away: migrating (next) says so, with the URL's server
        log.warning("database pool capacity unknown", error=first_line(err))
        return engine
    if capacity is not None:
        log.info(
            "database pool", pool_size=config.pool_size, max_overflow=config.pool_max_overflow,
            max_connections=capacity["max_connections"], replicas_that_fit=capacity["replicas"],
            note="replicas of all services x (pool_size + max_overflow) above the server's usable "
            "connections need PgBouncer (transaction mode, 1.21 or newer) in front of PostgreSQL and "
            "--listen-database-url naming the server itself (README's 'Running several replicas')",
        )
    return engine
