"""The dashboard's window onto other apps' reads.

Each function here calls the owning app's selector and shapes nothing but field names, so a page
never carries its own copy of a domain query. Where an app's selector has not landed yet, the page
gets ``None`` and says "尚无数据" instead of guessing.
"""

from importlib import import_module
from typing import Any

from django.db.models import Max, Q

from threads.models import Thread
from webnovel.models import Book
from webnovel.selectors import book_current_chapter


def optional(module: str, name: str) -> Any:
    """``module.name`` if that app has shipped it, else None."""
    try:
        return getattr(import_module(module), name, None)
    except ModuleNotFoundError:
        return None


def threads_open(*, book: Book) -> list[dict]:
    """Open threads with how long each has hung (chapters since its last recorded activity) and its
    type's threshold. Hang is computed now, from the current chapter, never stored."""
    current = book_current_chapter(book=book) or 0
    rows = (
        Thread.objects.filter(book=book, status=Thread.Status.OPEN)
        .annotate(last_history=Max("history__chapter", filter=Q(history__chapter__lte=current)))
        .order_by("type", "thread_id")
        .values("thread_id", "type", "title", "strength", "opened_chapter", "planned_end", "last_history")
    )
    out = []
    for row in rows:
        last = max(c for c in (row["opened_chapter"], row["last_history"], 0) if c is not None)
        threshold = book.threshold(row["type"])
        hang = max(0, current - last) if last else 0
        out.append(
            {
                **row,
                "last_chapter": last or None,
                "hang": hang,
                "threshold": threshold,
                "overdue": hang > threshold,
            }
        )
    return out


def contradicted_count(*, book: Book) -> int | None:
    """How many memory facts are marked contradicted, or None until the memory app provides it."""
    return None


def contradicted_admin_url(*, book: Book) -> str | None:
    return None
