"""Issue 29: the FTS5 search index keeps no per-line token counts (``columnsize=0``).

FTS5 stores each row's token count in a ``_docsize`` table for ranking functions (bm25); core.search
never ranks (hits come in chapter and line order), so that table was a row written per indexed line
for nothing: ~10 % of the bulk insert of a 3,000-chapter book (161,000 lines). The index answers the
same MATCH queries. The table is recreated and filled again from the line table ('rebuild').

PostgreSQL (a pg_trgm GIN index) is unchanged.
"""

from django.db import migrations

TABLE = "webnovel_search_fts"
CREATE = (
    f"CREATE VIRTUAL TABLE {TABLE} USING fts5("
    "text, content='webnovel_search_line', content_rowid='id', tokenize='trigram'{options})"
)
SQLITE_FORWARD = [
    f"DROP TABLE IF EXISTS {TABLE}",
    CREATE.format(options=", columnsize=0"),
    f"INSERT INTO {TABLE} ({TABLE}) VALUES ('rebuild')",
]
SQLITE_BACKWARD = [
    f"DROP TABLE IF EXISTS {TABLE}",
    CREATE.format(options=""),
    f"INSERT INTO {TABLE} ({TABLE}) VALUES ('rebuild')",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for sql in statements:
                schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("webnovel", "0016_h29_chapter_thread_refs")]

    operations = [migrations.RunPython(_run(SQLITE_FORWARD), _run(SQLITE_BACKWARD))]
