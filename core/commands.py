"""The one base of the management commands that take a book: ``BookCommand``.

Zulip's ``ZulipBaseCommand`` idea: the argument every command shares (here the book), the way a
command fails, and the output flag are written once, so eighteen commands cannot drift apart.

- The book: a positional ``book`` (a slug) that :meth:`BookCommand.book_get` turns into a ``Book``;
  a command whose book may be a folder on disk (``rebuild``) resolves it with
  :meth:`BookCommand.book_root_get`. ``book_argument = None`` for a command without one.
- Errors: every :class:`kernel.exceptions.DomainError` raised while the command runs becomes a
  ``CommandError`` with its Chinese message and exit status ``status_code // 100`` (4 for bad input,
  the same as ``story``), never a traceback. The details (``extra``) go to stderr: the
  ``{"message", "extra"}`` JSON of the REST API under ``--json``, the ``extra["errors"]`` lines in text.
- Output: ``--json`` for machine output; text for people by default. A command whose output agents
  parse today (``ingest``, ``memory_health``…) keeps JSON as its default (``json_default = True``).
  ``--format json|text`` is accepted as a hidden alias of ``--json``.
"""

import argparse
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.lazybuild import book_build, book_folder_find
from core.models import Book
from core.selectors import book_get
from kernel.bounds import NUMBER_MAX
from kernel.exceptions import DomainError, NotFound


def json_render(data: Any, *, indent: int | None = 2) -> str:
    """The JSON of a command's machine output: indented, Chinese unescaped, the selectors' key order."""
    return json.dumps(data, ensure_ascii=False, indent=indent)


class BookCommand(BaseCommand):
    """A management command on one book: the book argument, one error mapping, one ``--json``."""

    book_argument: str | None = "book"
    book_help = "书籍 slug"
    json_default = False
    json_help = "以 JSON 输出（默认输出给人看的文本）"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        if self.book_argument:
            parser.add_argument(self.book_argument, help=self.book_help)
        self.add_command_arguments(parser)
        self.add_output_arguments(parser)

    def add_command_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The command's own arguments (after the book, before ``--json``)."""

    def add_output_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--json`` and its hidden alias ``--format json|text`` (call it on each subparser, if any)."""
        if self.json_default:
            parser.add_argument("--json", action="store_true", help="以 JSON 输出（本命令默认即 JSON）")
            return
        parser.add_argument("--json", action="store_true", help=self.json_help)
        parser.add_argument("--format", dest="output_format", choices=("json", "text"), help=argparse.SUPPRESS)

    def execute(self, *args: Any, **options: Any) -> Any:
        fmt = options.pop("output_format", None)
        options["json"] = bool(options.get("json")) or fmt == "json" or self.json_default
        try:
            return super().execute(*args, **options)
        except DomainError as exc:
            self.domain_error_details(exc, as_json=options["json"])
            raise CommandError(exc.message, returncode=exc.status_code // 100) from exc

    def domain_error_details(self, exc: DomainError, *, as_json: bool) -> None:
        """What the message alone does not say, on stderr (machine: the REST body; people: each error)."""
        if as_json:
            self.stderr.write(json.dumps(exc.as_dict(), ensure_ascii=False, default=str))
            return
        errors = exc.extra.get("errors") if isinstance(exc.extra, dict) else None
        for error in errors if isinstance(errors, list) else []:
            self.stderr.write(error if isinstance(error, str) else json.dumps(error, ensure_ascii=False, default=str))

    def emit(self, data: Any, text: str | None, options: dict[str, Any], *, indent: int | None = 2) -> None:
        """Print ``data`` as JSON under ``--json`` (or by default for a JSON-first command), else ``text``.
        ``indent=None``: the one-line JSON some commands have always printed (kept byte for byte)."""
        self.stdout.write(json_render(data, indent=indent) if options["json"] or text is None else text)

    # ── the book ────────────────────────────────────────────────────────────────────────────────

    def book_get(self, options: dict[str, Any], name: str | None = None) -> Book:
        """The book named by the slug in ``options[name]`` (the positional book by default); a book folder
        (a path, or a folder name under WEBNOVEL_BOOKS_DIR) whose book is not in the database is rebuilt
        first (the database is a cache of the folder), and the command says so on stderr."""
        value = options[name or self.book_argument]
        try:
            return book_get(slug=value)
        except NotFound:
            root = book_folder_find(value, paths=True)
            if root is None:
                raise
            return self.book_at(str(root))

    def book_at(self, root: str) -> Book:
        """The book whose folder is ``root``; when the database has none, the folder is rebuilt first
        (lazy rebuild: the files, then the journal of agent and curator writes; core/lazybuild.py)."""
        path = Path(root).expanduser().resolve()
        if not path.is_dir():
            raise NotFound(
                f"没有以 {path} 为文件夹的书籍：先运行 rebuild {root}，或改用 --book <slug>",
                extra={"story_root": str(path)},
            )
        book, report = book_build(root=path)
        if report is not None:
            replayed = sum(report.get("journal", {}).values())
            self.stderr.write(
                f"《{report['title'] or report['book']}》不在数据库中：已从 {path} 重建"
                f"（{report['counts']['chapters']} 章，重放日志 {replayed} 条）"
            )
        return book

    @staticmethod
    def book_root_get(value: str) -> Path:
        """A book folder: a path, else a folder name under WEBNOVEL_BOOKS_DIR, else the folder of the book
        with that slug (for a book that is already in the database)."""
        root = Path(value).expanduser()
        if not root.is_dir() and (Path(settings.WEBNOVEL_BOOKS_DIR) / value).is_dir():
            root = Path(settings.WEBNOVEL_BOOKS_DIR) / value  # a bare folder name
        if not root.is_dir():
            book = Book.objects.filter(slug=value).first()
            if book is not None and Path(book.root).is_dir():
                root = Path(book.root)
        if not root.is_dir():
            raise CommandError(f"书籍文件夹不存在：{root}")
        return root.resolve()

    @staticmethod
    def number_check(value: int | None, *, what: str = "章节号") -> int | None:
        """Refuse a chapter number outside 1…NUMBER_MAX at the door (past 64 bits it would reach the
        database as an OverflowError)."""
        if value is not None and not 1 <= value <= NUMBER_MAX:
            raise CommandError(f"{what}必须是 1…{NUMBER_MAX:,} 的整数：{value}")
        return value
