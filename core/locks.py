"""The one lock every writer of a book takes first: its ``Book`` row, ``SELECT … FOR NO KEY UPDATE``.

Rebuild, sync, finalize, extraction ingestion, the memory derivation (after-chapter hook, refresh,
scratchpad import, fact writes) and entity curation all write rows of the same book — appearances,
state changes, facts, chunks — in different orders. Side by side on PostgreSQL they deadlocked or
collided on unique constraints (an ingestion during a rebuild: ``uniq_appearance``, the extraction
lost). Taking this lock as the first statement of each writer's transaction makes them queue, in one
order, so none ever holds a row another is waiting for. ``NO KEY UPDATE`` rather than ``UPDATE``:
writers exclude each other, but a reader that inserts a row pointing at the book (the memory-hit log
of a context read, an API key's ``last_used_at``) takes only ``KEY SHARE`` and does not queue behind a
long rebuild. Finer locks (the search index writer's advisory lock) are only ever taken after it.

SQLite needs nothing: its ``IMMEDIATE`` transactions (settings) already admit one writer at a time."""

from django.db import connection

from core.models import Book


def book_write_lock(*, book: Book) -> None:
    """Queue behind every other writer of ``book`` until the caller's transaction ends."""
    if connection.vendor == "sqlite":
        return
    list(Book.objects.select_for_update(no_key=True).filter(pk=book.pk).values_list("pk", flat=True))
