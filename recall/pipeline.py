"""When vectors are made: after a chapter is committed (finalize / sync / rebuild), and on command.

The after-chapter hook (registered in ``RecallConfig.ready()``, before the memory hook) embeds the windows
of the chapters just written whose text has no vector yet — a changed chapter re-embeds only its
changed windows, an unchanged one nothing, a rebuild into an empty database nothing that was embedded
before (the store is keyed by text hash). Recall off or the model missing: nothing happens, keywords
answer. Anything else that fails is reported by the hook runner as a warning; the chapter stays
written and ``manage.py embed <book>`` makes the vectors later.
"""

import time
from typing import Any

from django.conf import settings

from core.models import Book
from recall import vectors
from recall import windows as recall_windows
from recall.search import book_windows


def vectors_ensure(
    *, book: Book, numbers: list[int] | None = None, progress=None, workers: int | None = None
) -> dict[str, Any]:
    """Embed every window of ``numbers`` (None: the whole book) that has no vector yet; a pass of many texts
    is shared by ``workers`` processes (default ``WEBNOVEL_RECALL_WORKERS``)."""
    ok, reason = vectors.status()
    if not ok:
        return {"embedded": 0, "windows": 0, "skipped": reason}
    started = time.perf_counter()
    windows = book_windows(book=book, numbers=numbers)
    texts = {w.key: w.embed_text for w in windows}
    store = vectors.store_get()
    workers = settings.WEBNOVEL_RECALL_WORKERS if workers is None else workers
    embedded = store.add(texts, tokens=recall_windows.SCHEME.embed_tokens, progress=progress, workers=workers)
    return {
        "model": vectors.model_tag(),
        "windows": len(windows),
        "texts": len(texts),
        "embedded": embedded,
        "workers": workers if embedded >= vectors.WORKERS_MIN_TEXTS else 1,
        "seconds": round(time.perf_counter() - started, 3),
    }


def recall_after_chapter(*, book: Book, numbers: list[int] | None, removed: list[int] | None = None, **_: Any) -> None:
    """The after-chapter hook: vectors for the windows of the chapters just written."""
    vectors_ensure(book=book, numbers=numbers)
