"""Schema migrations (Alembic) run on start: the migrations build exactly the tables the models describe, on
every backend, and a database made before migrations existed is adopted, not re-created."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, insert, inspect, select, text
from sqlalchemy.engine import Engine

from ggmodules.storage.engine import make_engine
from ggmodules.storage.migrations import HERE, SERVICES, described_by_models, migrate, version_table
from tests.harness import BACKENDS, drop_database, new_database_url


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = new_database_url(request.param, "migrations", tmp_path)
    eng = make_engine(url)
    yield eng
    eng.dispose()
    drop_database(url)


def models(service: str) -> MetaData:
    md = MetaData()
    for table in importlib.import_module(f"ggmodules.storage.{service}.tables").TABLES:
        table.to_metadata(md)
    return md


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_migrations_build_exactly_the_tables_the_models_describe(engine: Engine, service: str) -> None:
    migrate(engine, service)
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "include_name": described_by_models}
        )
        differences = compare_metadata(context, models(service))
    # Every table of the database that is not this service's (the version table) shows up as "remove".
    ours = [d for d in differences if not (d[0] == "remove_table" and d[1].name == version_table(service))]
    assert ours == [], f"{service}: models and migrations disagree; add a revision: {ours}"


def test_migrating_twice_changes_nothing_and_services_share_a_database(engine: Engine) -> None:
    for service in SERVICES:
        migrate(engine, service)
    before = sorted(inspect(engine).get_table_names())
    for service in SERVICES:
        migrate(engine, service)
    assert sorted(inspect(engine).get_table_names()) == before
    assert {version_table(s) for s in SERVICES} <= set(before)


def baseline_without_version_table(engine: Engine, service: str) -> None:
    """What the services made before migrations existed: the baseline tables, and no version table (the
    models themselves may have moved on since, with later revisions)."""
    _, baseline = SERVICES[service]
    with engine.begin() as conn:
        config = Config()
        config.set_main_option("script_location", str(HERE / service))
        config.attributes.update(connection=conn, version_table=version_table(service))
        command.upgrade(config, baseline)
        conn.execute(text(f"DROP TABLE {version_table(service)}"))


def test_a_database_made_before_migrations_is_adopted_with_its_rows(engine: Engine) -> None:
    baseline_without_version_table(engine, "transfer")
    md = MetaData()
    md.reflect(engine)
    table = md.tables["tr_transfers"]
    row = {c.name: (0 if c.type.python_type is int else b"" if c.type.python_type is bytes else "x")
           for c in table.columns}
    row["transfer_id"] = "transfer-1"
    with engine.begin() as conn:
        conn.execute(insert(table).values(row))
    migrate(engine, "transfer")
    with engine.connect() as conn:
        assert conn.execute(select(table.c.transfer_id)).scalars().all() == ["transfer-1"]
        assert version_table("transfer") in inspect(conn).get_table_names()
