"""The after-chapter pipeline of the memory app: derive facts (memory/derivation.py), index chunks
(memory/retrieval.py) and compact (memory/compaction.py) after a chapter's commit, or for the whole
book after a rebuild. ``memory_after_chapter`` is the hook configured in
``WEBNOVEL_AFTER_CHAPTER_HOOKS``.

It sits above the fact primitives (memory/services.py) and the three steps, which never import it."""

from typing import Any

from django.db import transaction

from core.models import Book
from memory.compaction import facts_compact
from memory.derivation import facts_derive
from memory.models import Chunk
from memory.retrieval import chunks_index
from memory.services import derivation_lock


def memory_orphans(*, book: Book) -> list[int]:
    """Chapters that still have retrieval chunks but no longer exist: their deletion was committed
    while the hook did not run to the end (killed, or failed before this fix). Every hook run treats
    them as removed, so a rerun of a sync that finds no changed file still catches up. Chunks, not
    facts, are the signal: chunks come from the chapter file alone, while a deleted chapter may keep
    facts derived from what outlives it (its ingested extraction, the timeline file's events)."""
    present = set(book.chapters.order_by().values_list("number", flat=True))
    chunked = set(Chunk.objects.filter(book=book).order_by().values_list("chapter", flat=True).distinct())
    return sorted(chunked - present)


def memory_after_chapter(*, book: Book, numbers: list[int] | None, removed: list[int] | None = None, **_: Any) -> None:
    """The after-chapter hook (WEBNOVEL_AFTER_CHAPTER_HOOKS): derive facts, index chunks, compact.

    ``numbers=None`` means every chapter (a rebuild). It runs after the chapter's commit in its own
    transaction: a failure rolls back only the memory update and propagates to the hook runner
    (kernel/indexing.py), which keeps the chapter and reports the failure in the command's result."""
    with transaction.atomic():
        derivation_lock(book=book)
        if numbers is None:
            memory_refresh(book=book)
            return
        removed = sorted(set(removed or []) | set(memory_orphans(book=book)))
        if removed:
            Chunk.objects.filter(book=book, chapter__in=removed).delete()
        touched: set[str] = set()
        facts_derive(book=book, chapters=list(numbers) + list(removed or []), touched=touched)
        chunks_index(book=book, chapters=list(numbers))
        facts_compact(book=book, subjects=touched)


@transaction.atomic
def memory_refresh(*, book: Book) -> dict[str, int]:
    """Derive every chapter's facts and chunks again (after a rebuild or an import of old data)."""
    derivation_lock(book=book)
    numbers = sorted(book.chapters.values_list("number", flat=True))
    derived = facts_derive(book=book, chapters=numbers, full=True)
    chunks = chunks_index(book=book, chapters=numbers, full=True)
    compacted = facts_compact(book=book)
    return {"chapters": len(numbers), **derived, "chunks": chunks, **compacted}
