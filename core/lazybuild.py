"""The lazy build: a book whose folder is in WEBNOVEL_BOOKS_DIR but not yet in the database is built on
its first query, at every door (the ``story`` CLI, the management commands, REST, MCP), as the seed's
cache is rebuilt on first use.

The core sits below the book-files app, so it cannot call the rebuilder itself: the book-files app
registers it here in ``BookfilesConfig.ready()`` (``book_rebuilder_register``), a registration the layer
contract sees, where a dotted path in settings would hide the up-call.

Safety rules are those of ``rebuild`` (the registered function is ``book_rebuild`` without ``--replace``:
a folder that is not the book's recorded one, or one that drops most of its chapters, is refused and
nothing is written). A network door (REST, MCP over HTTP) names a book by a bare folder name only — never
a path — so a caller cannot make the server read a folder outside WEBNOVEL_BOOKS_DIR.
"""

import json
import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from core.models import Book
from core.selectors import book_get
from kernel.exceptions import InvalidInput, NotFound
from kernel.interfaces import target_resolve
from kernel.safefs import book_file_write

_rebuilder: Callable[..., dict[str, Any]] | str | None = None
_rereader: Callable[..., dict[str, Any]] | str | None = None
# Two first queries of one process build once; another process's concurrent build ends in the rebuild's
# own book lock (the second one finds the book and replaces it by the same rows).
_build_lock = threading.Lock()
_FOLDER_NAME = re.compile(r"^[\w\-\u4e00-\u9fff][\w.\-\u4e00-\u9fff]*$")


def book_rebuilder_register(fn: Callable[..., dict[str, Any]] | str) -> None:
    """Register the function ``fn(root=Path) -> report`` that builds a book from its folder: the function,
    or the registering app's own dotted path to it, imported on the first lazy build (the rebuilder
    imports every app's writers: ~0.3 s that no ``django.setup()`` of an agent's call should pay)."""
    global _rebuilder
    _rebuilder = fn


def book_folder_find(ref: str, *, paths: bool = False) -> Path | None:
    """The book folder ``ref`` names: a folder name under WEBNOVEL_BOOKS_DIR (or, with ``paths``, a path
    to a folder), holding a ``book.yaml``; None otherwise."""
    candidates = []
    if paths:
        candidates.append(Path(ref).expanduser())
    if _FOLDER_NAME.match(ref) and ".." not in ref:
        candidates.append(Path(settings.WEBNOVEL_BOOKS_DIR) / ref)
    for candidate in candidates:
        try:
            found = (candidate / "book.yaml").is_file()
        except OSError:  # a name no file system holds (over 255 bytes, say): no such folder
            continue
        if found:
            return candidate.resolve()
    return None


def book_build(*, root: Path) -> tuple[Book, dict[str, Any] | None]:
    """The book whose folder is ``root``: the database's when it has one, else built from the folder by the
    registered rebuilder (its report second). A refused or failed build is an InvalidInput saying why."""
    with _build_lock:
        book = Book.objects.filter(root=str(root)).first()
        if book is not None:
            return book, None
        if _rebuilder is None:
            raise NotFound(
                f"{root} 的书籍不在数据库中：先运行 manage.py rebuild {root}", extra={"story_root": str(root)}
            )
        rebuild = target_resolve(_rebuilder)
        report = rebuild(root=root)
        if not report["ok"]:
            raise InvalidInput(
                f"{root} 的书籍不在数据库中，从文件夹重建失败：{report['errors'][0]['message']}",
                extra={"story_root": str(root), "errors": report["errors"]},
            )
        return Book.objects.get(slug=report["book"]), report


def book_get_or_build(*, slug: str, paths: bool = False) -> Book:
    """The book with this slug; when the database has none but ``slug`` names a book folder (see
    ``book_folder_find``), the book built from it. NotFound as ``book_get`` otherwise."""
    try:
        return book_get(slug=slug)
    except NotFound:
        root = book_folder_find(slug, paths=paths)
        if root is None:
            raise
    return book_build(root=root)[0]


def book_files_rereader_register(fn: Callable[..., dict[str, Any]] | str) -> None:
    """Register ``fn(book=, paths=) -> report`` (the book-files app's ``book_files_reread``), which loads
    the rows of author's files a service below it has just written, as a sync would."""
    global _rereader
    _rereader = fn


def book_files_reread(*, book: Book, paths: list[str], rescan: bool = False) -> dict[str, Any]:
    """Load ``paths`` (files of ``book``'s folder a write of a lower app changed, such as the roster a
    confirmed discovery wrote) into their rows inside the caller's transaction, as the next sync would:
    the live database follows the folder at once. A report as sync's; raises InvalidInput when they
    cannot be loaded (the caller's transaction, and so its write, is undone). ``rescan``: every chapter is
    indexed again (a heal, which does not know which names changed)."""
    if _rereader is None:
        return {"ok": True}
    report = target_resolve(_rereader)(book=book, paths=paths, **({"rescan": True} if rescan else {}))
    if not report["ok"]:
        raise InvalidInput(
            f"{'、'.join(paths)} 已写入但无法载入：{report['errors'][0]['message']}",
            extra={"paths": paths, "errors": report["errors"]},
        )
    return report


# An author's file a journaled service rewrites (the roster a confirmed discovery adds to) is written before the
# service's journal line and its commit, so a writer killed in between leaves the file changed, the database not,
# and no event for the heal to apply: the live book would lack what a rebuild reads from the file until the next
# sync (issue 24). The path is recorded here first (durably), and the record removed once the write commits; the
# next writer's heal (``core.journal.journal_heal``) re-reads what a record names, as a sync would.
FILES_WRITING = ".journal/files-writing.json"

logger = logging.getLogger(__name__)


def book_files_writing(*, book: Book, paths: list[str]) -> None:
    """Record, before writing them, that ``paths`` of ``book``'s folder are being rewritten by a service inside
    the caller's transaction; the record is removed after its commit (left by a writer killed before it)."""
    root = Path(book.root)
    names = sorted(set(paths) | set(_writing_read(root)))
    book_file_write(root=root, relative=FILES_WRITING, text=json.dumps(names, ensure_ascii=False))
    transaction.on_commit(lambda: (root / FILES_WRITING).unlink(missing_ok=True))


def book_files_writing_heal(*, book: Book) -> list[str]:
    """Re-read, as a sync would, the files a killed writer recorded as being rewritten; the paths re-read (a
    stat when there is no record). A file that no longer loads is left to the next sync, which reports it."""
    if not book.root:
        return []
    root = Path(book.root)
    paths = _writing_read(root)
    if paths:
        try:
            book_files_reread(book=book, paths=paths, rescan=True)
        except InvalidInput as exc:
            logger.warning("re-reading %s of %s after a killed writer: %s", paths, book.slug, exc)
        (root / FILES_WRITING).unlink(missing_ok=True)
    return paths


def _writing_read(root: Path) -> list[str]:
    try:
        names = json.loads((root / FILES_WRITING).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # no record (the usual case), or one cut short by a crash of the machine
        return []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
