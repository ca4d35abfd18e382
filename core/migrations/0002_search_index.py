"""The search index (see core/search.py): a line table plus a trigram index.

SQLite: an external-content FTS5 table with the ``trigram`` tokenizer, kept in sync by triggers.
PostgreSQL: a ``pg_trgm`` GIN index on the line text. No Django model: the table is only ever
read and written with SQL by core.search, so the state of the migration graph is unchanged.
"""

from django.db import migrations

SQLITE_FORWARD = [
    """CREATE TABLE webnovel_search_line (
        id INTEGER PRIMARY KEY,
        book_id INTEGER NOT NULL,
        chapter INTEGER NOT NULL,
        line INTEGER NOT NULL,
        text TEXT NOT NULL
    )""",
    "CREATE INDEX webnovel_search_line_loc ON webnovel_search_line (book_id, chapter, line)",
    """CREATE VIRTUAL TABLE webnovel_search_fts USING fts5(
        text, content='webnovel_search_line', content_rowid='id', tokenize='trigram'
    )""",
    """CREATE TRIGGER webnovel_search_line_ai AFTER INSERT ON webnovel_search_line BEGIN
        INSERT INTO webnovel_search_fts (rowid, text) VALUES (new.id, new.text);
    END""",
    """CREATE TRIGGER webnovel_search_line_ad AFTER DELETE ON webnovel_search_line BEGIN
        INSERT INTO webnovel_search_fts (webnovel_search_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS webnovel_search_line_ad",
    "DROP TRIGGER IF EXISTS webnovel_search_line_ai",
    "DROP TABLE IF EXISTS webnovel_search_fts",
    "DROP TABLE IF EXISTS webnovel_search_line",
]
POSTGRES_FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    """CREATE TABLE webnovel_search_line (
        id BIGSERIAL PRIMARY KEY,
        book_id BIGINT NOT NULL,
        chapter INTEGER NOT NULL,
        line INTEGER NOT NULL,
        text TEXT NOT NULL
    )""",
    "CREATE INDEX webnovel_search_line_loc ON webnovel_search_line (book_id, chapter, line)",
    "CREATE INDEX webnovel_search_line_trgm ON webnovel_search_line USING gin (text gin_trgm_ops)",
]
POSTGRES_BACKWARD = ["DROP TABLE IF EXISTS webnovel_search_line"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            raise RuntimeError(f"search index: unsupported database {schema_editor.connection.vendor}")
        for sql in statements:
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("webnovel", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        )
    ]
