"""Writes of the threads app: the threads (伏笔 / 悬念 / 感情线) with their history, and the secrets, read
from the book's 线索/ and 信息差/ files.

Called by the book-files rebuilder (rebuild, finalize, sync) inside its transaction, with the book's
writer lock held; none opens a transaction of its own. Bulk writes only: one delete and one insert per
table, whatever the number of files.

This app may not import the book-files app above it, so the writers name the attributes they read from
the parser's dataclasses as a ``Protocol`` (``ParsedThread``, …), which those dataclasses satisfy as
they are.
"""

from collections.abc import Sequence
from typing import Any, Protocol

from core.models import Book
from kernel.bulk import rows_insert
from threads.models import Secret, Thread, ThreadHistoryEntry

BATCH = 500


class ParsedHistoryEntry(Protocol):
    order: int
    chapter: int | None
    text: str


class ParsedThread(Protocol):
    thread_id: str
    type: str
    path: str
    title: str
    strength: str
    status: str
    opened: int | None
    planned_end: int | None
    planned_end_volume: int | None
    closed: int | None
    description: str
    closing_plan: str

    @property
    def history(self) -> Sequence[ParsedHistoryEntry]: ...

    front_matter: dict[str, Any]


class ParsedSecret(Protocol):
    secret_id: str
    path: str
    title: str
    known_to: list[dict[str, Any]]
    reader_knows: bool
    reader_told: int | None
    registered: int | None
    keywords: list[str]
    content: str
    front_matter: dict[str, Any]


def threads_replace(*, book: Book, threads: Sequence[ParsedThread], paths: list[str] | None = None) -> int:
    """Replace the threads (and their history) read from ``paths`` (every thread of the book when None)
    by ``threads``; returns how many were written."""
    if paths is None:
        Thread.objects.filter(book=book).only("pk").delete()  # only("pk"): skip decoding the JSON
    else:
        Thread.objects.filter(book=book, source_path__in=paths).delete()
    rows = Thread.objects.bulk_create(
        [
            Thread(
                book=book,
                thread_id=t.thread_id,
                type=t.type,
                title=t.title[:200],
                strength=t.strength,
                status=t.status,
                opened_chapter=t.opened,
                planned_end=t.planned_end,
                planned_end_volume=t.planned_end_volume,
                closed_chapter=t.closed,
                description=t.description,
                closing_plan=t.closing_plan,
                front_matter=t.front_matter,
                source_path=t.path,
            )
            for t in threads
        ],
        batch_size=BATCH,
    )
    if all(r.pk is not None for r in rows):
        pks = {r.thread_id: r.pk for r in rows}
    else:  # primary keys come back from PostgreSQL and SQLite ≥ 3.35 only
        pks = dict(
            Thread.objects.filter(book=book, thread_id__in=[t.thread_id for t in threads])
            .order_by()
            .values_list("thread_id", "pk")
        )
    rows_insert(
        ThreadHistoryEntry,
        [
            {"thread_id": pks[t.thread_id], "order": h.order, "chapter": h.chapter, "text": h.text}
            for t in threads
            for h in t.history
        ],
    )
    return len(threads)


def secrets_replace(*, book: Book, secrets: Sequence[ParsedSecret], paths: list[str] | None = None) -> int:
    """Replace the secrets read from ``paths`` (every secret of the book when None) by ``secrets``;
    returns how many were written."""
    if paths is None:
        Secret.objects.filter(book=book).only("pk").delete()
    else:
        Secret.objects.filter(book=book, source_path__in=paths).delete()
    Secret.objects.bulk_create(
        [
            Secret(
                book=book,
                secret_id=s.secret_id,
                title=s.title[:200],
                known_to=s.known_to,
                reader_knows=s.reader_knows,
                reader_told_chapter=s.reader_told,
                registered_chapter=s.registered,
                keywords=s.keywords,
                content=s.content,
                front_matter=s.front_matter,
                source_path=s.path,
            )
            for s in secrets
        ],
        batch_size=BATCH,
    )
    return len(secrets)
