"""Best-effort writes on a read path: done now if the database is free, skipped if a writer holds it.

A read that also records something (an API key's ``last_used_at``, the context pack's hit log) must not
queue behind a long rebuild: on SQLite every write waits for the single writer lock, up to the busy
timeout (30 s), and then fails. ``write_if_free`` drops the wait to nothing for one write — SQLite's
busy timeout to 0, PostgreSQL's ``lock_timeout`` to 50 ms — and returns None when the database is
busy, so the read answers at once and the record is simply taken on a later request. Kernel module.
"""

from collections.abc import Callable
from typing import TypeVar

from django.db import DatabaseError, connection, transaction

from kernel.exceptions import database_busy

T = TypeVar("T")
PG_LOCK_TIMEOUT = "50ms"


def write_if_free(write: Callable[[], T]) -> T | None:
    """``write()`` in its own transaction (a savepoint inside a caller's) if no other writer holds the
    database now; None, with nothing written, if one does. Other database errors propagate."""
    sqlite = connection.vendor == "sqlite"
    previous = None
    try:
        if sqlite:
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA busy_timeout")
                previous = int(cursor.fetchone()[0])
                cursor.execute("PRAGMA busy_timeout = 0")
        with transaction.atomic():
            if sqlite:
                return write()
            # SET LOCAL semantics, restored before the block ends: inside a caller's transaction the
            # caller keeps its own lock_timeout (and a rollback undoes the change as well).
            with connection.cursor() as cursor:
                cursor.execute("SELECT current_setting('lock_timeout')")
                (pg_previous,) = cursor.fetchone()
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [PG_LOCK_TIMEOUT])
            result = write()
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [pg_previous])
            return result
    except DatabaseError as exc:
        if not database_busy(exc):
            raise
        return None
    finally:
        if previous is not None:
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA busy_timeout = {previous}")
