"""Extra chapter indexers and after-chapter hooks, configured in settings so the core never imports
the apps that plug in (mention scan, search index, memory).

- ``WEBNOVEL_CHAPTER_INDEXERS``: dotted paths called inside the rebuild / finalize / sync transaction
  after the core tables are written, as ``fn(book=book, numbers=[...] or None, removed=[...])``
  (``numbers=None`` means "every chapter"). An exception aborts the whole transaction. An indexer
  may return a dict whose ``warnings`` (report issue dicts: code, file, line, message) join the
  report (the mention indexer's skipped manual tags).
- ``WEBNOVEL_AFTER_CHAPTER_HOOKS``: same signature, called after commit, best effort: an exception
  is logged as a warning and never fails the chapter.
"""

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

from webnovel.models import Book

logger = logging.getLogger(__name__)


def _load(setting: str) -> list[tuple[str, Callable[..., object]]]:
    return [(path, import_string(path)) for path in getattr(settings, setting, [])]


def chapter_indexers_run(
    *, book: Book, numbers: list[int] | None, removed: list[int], warnings: list[dict] | None = None
) -> list[str]:
    """Run every configured indexer (inside the caller's transaction); returns their dotted paths and
    appends the warnings they return to ``warnings``."""
    ran = []
    for path, fn in _load("WEBNOVEL_CHAPTER_INDEXERS"):
        result = fn(book=book, numbers=numbers, removed=removed)
        if warnings is not None and isinstance(result, dict):
            warnings += result.get("warnings") or []
        ran.append(path)
    return ran


def after_chapter_hooks_schedule(*, book: Book, numbers: list[int] | None, removed: list[int]) -> list[str]:
    """Schedule every configured hook for after the commit; failures are logged, never raised."""
    hooks = _load("WEBNOVEL_AFTER_CHAPTER_HOOKS")

    def run() -> None:
        for path, fn in hooks:
            try:
                fn(book=book, numbers=numbers, removed=removed)
            except Exception:  # best effort by design: a hook never fails a chapter
                logger.warning("after-chapter hook %s failed for book %s", path, book.slug, exc_info=True)

    if hooks:
        transaction.on_commit(run)
    return [path for path, _ in hooks]
