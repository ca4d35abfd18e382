"""Issue 29: the thread-activity map (threads.selectors) reads the chapters that open or advance a
thread from a partial covering index, never from the chapter rows (each holds its whole body: ~5–10 ms
of page reads per process on 3,000 chapters, against ~0.5 ms from the index). Kept by the database on
every write of a chapter, whichever door writes it, so a live database and a rebuilt one hold the same.

SQLite only: a PostgreSQL B-tree entry is capped at ~2.7 kB, and a chapter opening hundreds of threads
would then fail to save; PostgreSQL reads the rows as before.
"""

from django.db import migrations

INDEX = "chapter_thread_refs_idx"
SQLITE_FORWARD = (
    f"CREATE INDEX {INDEX} ON webnovel_chapter (book_id, number, opens, advances) "
    "WHERE opens != '[]' OR advances != '[]'"
)
SQLITE_BACKWARD = f"DROP INDEX IF EXISTS {INDEX}"


def _run(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("webnovel", "0015_h24_follow_up")]

    operations = [migrations.RunPython(_run(SQLITE_FORWARD), _run(SQLITE_BACKWARD))]
