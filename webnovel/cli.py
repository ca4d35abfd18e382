"""The console scripts of the installed package (``[project.scripts]`` in pyproject.toml).

- ``webnovel …``: the management commands, as ``python manage.py …`` in a checkout (``webnovel migrate``,
  ``webnovel story thread demo-book 伏笔-001``, ``webnovel rebuild <folder>``).
- ``webnovel-mcp --book <folder|slug>``: the MCP server over stdio for one book, what an agent host starts. The
  database is ``--database-url`` (else ``DATABASE_URL``, else the embedded SQLite file under the data directory,
  created and migrated on first start). ``--book demo-book`` serves a copy of the demo book in the data directory,
  so nothing is ever written into the example the package (or a checkout) ships.

Django's settings are read when the first command runs, so the options set the environment before it: Django and
the apps are imported inside the functions, after that (not to dodge a layer: this module is the top one)."""

import argparse
import gc
import os
import re
import sys
from pathlib import Path

DEMO = "demo-book"
# SQLite's and PostgreSQL's words for a table that does not exist.
_MISSING_TABLE = re.compile(r"no such table|relation \"[^\"]+\" does not exist")


def django_start() -> None:
    """``django.setup()`` with the cyclic garbage collector paused, then every object it made frozen (never
    scanned again). Django's start allocates some 200,000 objects and leaves no garbage cycles: the collector's
    passes over them were ~35 ms of a `story` read's ~0.4 s CPU, and every later full pass (a read that
    decodes an index, a long rebuild) scanned them all again."""
    import django

    gc.disable()
    try:
        django.setup()
    finally:
        gc.freeze()
        gc.enable()


def command_run(argv: list[str]) -> None:
    """Run the management command of ``argv`` (``[prog, command, …]``) with this project's settings; Django
    starts in ``django_start`` unless the command line names its own settings or path (Django's options)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
    from django.core.management import execute_from_command_line

    if not any(a.startswith(("--settings", "--pythonpath")) for a in argv):
        django_start()
    from django.db.utils import OperationalError, ProgrammingError

    try:
        execute_from_command_line(argv)
    except (OperationalError, ProgrammingError) as exc:
        # A database never migrated (a new data directory, a wrong SQLITE_PATH / DATABASE_URL): say so in
        # the author's words, not with the driver's traceback. Any other database error stays as it was.
        if not _MISSING_TABLE.search(str(exc)):
            raise
        sys.stderr.write(
            f"数据库还没有建表（{exc}）：先运行 `python manage.py migrate`（或 `make run`），"
            "并确认 DATABASE_URL / SQLITE_PATH 指向要用的数据库。\n"
        )
        sys.exit(1)


def manage(argv: list[str] | None = None) -> None:
    """``webnovel <command> …``: Django's management commands with this project's settings."""
    command_run(["webnovel", *(sys.argv[1:] if argv is None else argv)])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="webnovel-mcp",
        description="以 stdio 运行一本书的 MCP 服务（Claude Code、Codex 等宿主启动它）。",
    )
    parser.add_argument(
        "--book",
        default=DEMO,
        help="书籍文件夹（含 book.yaml），或数据库中已有书籍的 slug；默认 demo-book：数据目录中的演示书副本",
    )
    parser.add_argument(
        "--database-url",
        help="数据库地址（如 postgres://user@host/db）；默认环境变量 DATABASE_URL，再默认数据目录中的 SQLite 文件",
    )
    parser.add_argument(
        "--data-dir", help="数据目录（SQLite 文件、索引、书籍副本）；默认 WEBNOVEL_DATA_DIR 或用户数据目录"
    )
    parser.add_argument("--read-only", action="store_true", help="只提供查询工具（不列出、也不接受写入工具）")
    return parser


def _migrate_embedded() -> None:
    """Create or bring up to date the embedded SQLite database; another database must be migrated by its owner
    (``webnovel migrate``): the server refuses to start on one that is behind, rather than change it unasked."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if not pending:
        return
    if connection.vendor != "sqlite" or os.environ.get("DATABASE_URL"):
        sys.exit(f"webnovel-mcp：数据库缺 {len(pending)} 个迁移，请先运行 `webnovel migrate`（同样的 --database-url）")
    call_command("migrate", verbosity=0, stdout=sys.stderr)


def mcp(argv: list[str] | None = None) -> None:
    """``webnovel-mcp``: the stdio MCP server of one book (stdout is the protocol's wire: nothing else goes there)."""
    options = _parser().parse_args(argv)
    if options.database_url:
        os.environ["DATABASE_URL"] = options.database_url
    if options.data_dir:
        os.environ["WEBNOVEL_DATA_DIR"] = str(Path(options.data_dir).expanduser().resolve())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
    django_start()
    from django.conf import settings
    from django.core.management import call_command

    _migrate_embedded()
    book = options.book
    if book == DEMO and not Path(book).is_dir():
        book = _demo_ref(settings)
    call_command("mcp", book=book, read_only=options.read_only)


def _demo_ref(settings) -> str:
    """What ``--book demo-book`` serves: the database's demo book when it lives in a copy, else a new copy."""
    from agents.books import example_copy
    from core.models import Book

    example = Path(settings.EXAMPLES_DIR) / DEMO
    known = Book.objects.filter(slug=DEMO).first()
    if known is None:
        if not (example / "book.yaml").is_file():
            sys.exit(f"webnovel-mcp：找不到随包安装的演示书 {example}；请用 --book 指定一个书籍文件夹")
        return str(example_copy(example))
    if os.path.realpath(known.root or "") == os.path.realpath(example):
        sys.exit(
            f"webnovel-mcp：数据库中的 demo-book 建自随附示例 {example}，写入会改动示例；"
            f"请用 --book 指定它的副本文件夹（或另用一个 --database-url）"
        )
    return DEMO
