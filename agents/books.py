"""Which book a stdio server serves: a slug, or a folder that is rebuilt (or synced) on first use.

Lazily, in the database thread at the first tool call, so a host's start-up handshake never waits for
a rebuild; a failed rebuild is a tool error and is tried again at the next call (the author may have
fixed the file meanwhile). A folder of the shipped examples (``settings.EXAMPLES_DIR``) is served from a copy in
the data directory, so the server's writes (the journal, ``.story-system/``) never change the example."""

import os
import shutil
import threading
from pathlib import Path

from django.conf import settings

from bookfiles.rebuilder import book_rebuild, book_sync
from core.models import Book
from core.selectors import book_get
from kernel.exceptions import InvalidInput


def book_folder(ref: str) -> Path | None:
    """The folder ``ref`` names (a path, or a folder under WEBNOVEL_BOOKS_DIR), or None for a slug."""
    for candidate in (Path(ref).expanduser(), Path(settings.WEBNOVEL_BOOKS_DIR) / ref):
        if (candidate / "book.yaml").is_file():
            return candidate.resolve()
    return None


def example_copy(source: Path) -> Path:
    """The copy of example book ``source`` under ``DATA_DIR/books`` (made the first time, without a journal or a
    story system a local run may have left in the example)."""
    target = Path(settings.DATA_DIR) / "books" / source.name
    if not (target / "book.yaml").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".journal", ".story-system"), dirs_exist_ok=True)
    return target.resolve()


def _in_examples(root: Path) -> bool:
    examples = os.path.realpath(settings.EXAMPLES_DIR)
    return os.path.commonpath([examples, os.path.realpath(root)]) == examples


class BookSource:
    """``--book``: a slug of the database, else a book folder (rebuilt when new, synced when known)."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        self._slug: str | None = None
        self._lock = threading.Lock()

    def __call__(self) -> Book:
        with self._lock:
            if self._slug is None:
                self._slug = self._load().slug
        # A fresh row each call: a rebuild or sync by another process changes its fields.
        return book_get(slug=self._slug)

    def _load(self) -> Book:
        known = Book.objects.filter(slug=self.ref).first()
        if known is not None:
            return known
        root = book_folder(self.ref)
        if root is None:
            return book_get(slug=self.ref)  # NotFound naming it
        if _in_examples(root):
            root = example_copy(root)
        book = Book.objects.filter(root=str(root)).first()
        report = book_sync(book=book) if book is not None else book_rebuild(root=root)
        if not report["ok"]:
            action = "同步" if book is not None else "重建"
            raise InvalidInput(
                f"书籍文件夹 {root} {action}失败：{len(report['errors'])} 个错误，数据库未改动", extra=report
            )
        return Book.objects.get(slug=report["book"])
