"""modulestore: the archive's full-text index, kept by the database in the statement that archives a thread,
and filled from the threads already archived.

SQLite: the FTS5 table `ms_archive_fts` (porter stemming; accents kept, as PostgreSQL keeps them) with
rowid `key << 32 | seq`, `key` being the store's rowid in `ms_archive_fts_stores`; triggers on
`ms_archive_threads` keep it.
PostgreSQL: the generated column `ms_archive_threads.search_vector` (title weighted A, message contents B,
and one position-less lexeme naming the store, `s` + md5(run_id/store_id), so that the GIN index narrows a
search to its store) and the GIN index `ix_ms_archive_threads_search`; adding the column computes it for
every row.

The portable models do not describe these (see `ggmodules.storage.migrations.UNMODELLED`).

Revision ID: h6_ms_0002
Revises: ms_0001
"""

from alembic import op

revision = "h6_ms_0002"
down_revision = "h1_ms_0002"
branch_labels = None
depends_on = None

# A thread's message contents, one per line, from its JSON list of [role, content].
_SQLITE_BODY = "(SELECT group_concat(json_extract(value, '$[1]'), char(10)) FROM json_each({row}.messages))"
_SQLITE_ROWID = (
    "(SELECT rowid FROM ms_archive_fts_stores WHERE run_id = {row}.run_id AND store_id = {row}.store_id)"
    " * 4294967296 + {row}.seq"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE ms_archive_threads ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ("
            "setweight(to_tsvector('english'::regconfig, title), 'A') || "
            "setweight(jsonb_to_tsvector('english'::regconfig, "
            "jsonb_path_query_array(messages::jsonb, '$[*][1]'), '[\"string\"]'), 'B') || "
            "array_to_tsvector(ARRAY['s' || md5(run_id || '/' || store_id)])) STORED"
        )
        op.execute(
            "CREATE INDEX ix_ms_archive_threads_search ON ms_archive_threads USING gin (search_vector)"
        )
        return
    op.execute(
        "CREATE TABLE ms_archive_fts_stores (run_id VARCHAR NOT NULL, store_id VARCHAR NOT NULL, "
        "UNIQUE (run_id, store_id))"
    )
    op.execute(
        "CREATE VIRTUAL TABLE ms_archive_fts USING fts5("
        "title, body, tokenize = 'porter unicode61 remove_diacritics 0')"
    )
    op.execute(
        "CREATE TRIGGER ms_archive_fts_insert AFTER INSERT ON ms_archive_threads BEGIN "
        "INSERT OR IGNORE INTO ms_archive_fts_stores (run_id, store_id) VALUES (NEW.run_id, NEW.store_id); "
        f"INSERT INTO ms_archive_fts (rowid, title, body) VALUES ({_SQLITE_ROWID.format(row='NEW')}, "
        f"NEW.title, {_SQLITE_BODY.format(row='NEW')}); "
        "END"
    )
    op.execute(
        "CREATE TRIGGER ms_archive_fts_delete AFTER DELETE ON ms_archive_threads BEGIN "
        f"DELETE FROM ms_archive_fts WHERE rowid = {_SQLITE_ROWID.format(row='OLD')}; "
        "END"
    )
    # The threads archived before this revision.
    op.execute(
        "INSERT OR IGNORE INTO ms_archive_fts_stores (run_id, store_id) "
        "SELECT DISTINCT run_id, store_id FROM ms_archive_threads"
    )
    op.execute(
        "INSERT INTO ms_archive_fts (rowid, title, body) "
        f"SELECT {_SQLITE_ROWID.format(row='t')}, t.title, {_SQLITE_BODY.format(row='t')} "
        "FROM ms_archive_threads AS t"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX ix_ms_archive_threads_search")
        op.execute("ALTER TABLE ms_archive_threads DROP COLUMN search_vector")
        return
    op.execute("DROP TRIGGER ms_archive_fts_delete")
    op.execute("DROP TRIGGER ms_archive_fts_insert")
    op.execute("DROP TABLE ms_archive_fts")
    op.execute("DROP TABLE ms_archive_fts_stores")
