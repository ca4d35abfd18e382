"""Durable after-commit follow-ups (issue 24): the hooks a write schedules for after its commit (memory
facts, chunks) are recorded in its transaction (``FollowUp``) and the record deleted once they have run.
A writer killed between its commit and the end of its hooks, or a hook that failed, leaves the record;
the next sync and the next writer's journal heal run it (``follow_ups_complete``), so the derived rows
catch up with what they are derived from. Registered into ``kernel.indexing`` by ``CoreConfig.ready()``."""

import logging
from typing import Any

from django.db import connection

from core.models import Book, FollowUp
from kernel.indexing import after_chapter_hooks_run

logger = logging.getLogger(__name__)

# The follow-ups this process recorded whose commit has not come yet: a sync inside the same outer
# transaction sees their rows, and they are not left over (their own after-commit run completes them).
_inflight: set[int] = set()


def follow_up_add(*, book: Any, numbers: list[int] | None, removed: list[int], entities: list[str]) -> int:
    """Record a follow-up in the caller's transaction; its id (``follow_up_done`` deletes it)."""
    pk = FollowUp.objects.create(book=book, numbers=numbers, removed=list(removed), entities=list(entities)).pk
    _inflight.add(pk)
    return pk


def follow_up_done(*, pk: int) -> None:
    _inflight.discard(pk)
    FollowUp.objects.filter(pk=pk).delete()


def follow_ups_complete(*, book: Book) -> int:
    """Run the follow-ups of ``book`` left over by a writer that died after its commit (or whose hook
    failed), oldest first, each deleted once its hooks ran without failing; how many ran. One query when
    none is left."""
    if not connection.in_atomic_block:  # every commit of this process has run its hooks (or failed them)
        _inflight.clear()
    rows = [r for r in FollowUp.objects.filter(book=book).order_by("pk") if r.pk not in _inflight]
    for row in rows:
        logger.info("completing a follow-up of %s left by a writer (chapters %s)", book.slug, row.numbers)
        if after_chapter_hooks_run(book=book, numbers=row.numbers, removed=row.removed, entities=row.entities or None):
            row.delete()
    return len(rows)
