"""``python manage.py demo_setup`` — load the demo book and its sample extractions, ensure an admin
user and a demo API key.

The demo runs on a copy, ``var/demo-book`` (``<DATA_DIR>/demo-book`` outside a checkout): what the demo writes into its book folder (the journal of
its ingestions and curations, ``.journal/``; a persisted Story System setting, ``.story-system/``) goes
there, and the checked-in ``examples/demo-book`` stays as git has it. Each run refreshes the copy's
author files from the example and keeps what the demo wrote; ``--reset`` starts the copy afresh.

Idempotent: run it as often as you like (``make run`` does, on every start). The sample Data Agent
extractions (``examples/demo-extractions``) are ingested after the rebuild through the same service
as ``manage.py ingest``, which replaces a chapter's previous extraction (so nothing piles up). The admin password is
only set when the user is created or when ``WEBNOVEL_ADMIN_PASSWORD`` is given; the demo key is
rotated (the previous demo key of the demo book is revoked, and the output says so) so exactly one is
live and its raw value can be printed; ``--no-key`` keeps the previous one. The printed addresses use
``--host`` / ``--port`` (``make run`` passes its ``HOST`` / ``PORT``).
"""

import os
import secrets
import shutil
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction

from bookfiles.rebuilder import book_rebuild
from core.commands import BookCommand
from core.models import ApiKey, Book
from core.services import apikey_create
from entities.models import PendingItem
from kernel.exceptions import DomainError
from webnovel.demo import demo_extractions_ingest

DEMO_SOURCE = Path(settings.BASE_DIR) / "examples" / "demo-book"
# the data directory: var/ in a checkout; an installed package never writes beside its own code
DEMO_BOOK = Path(settings.DATA_DIR) / "demo-book"
# What the demo writes into its folder (kept when the copy is refreshed, never copied from the example)
WRITTEN = (".journal", ".story-system")
DEMO_KEY_NAME = "demo-book 演示密钥"
WILDCARD_HOSTS = {"0.0.0.0", "::", "[::]", ""}


def urls_for(*, host: str, port: int) -> dict[str, str]:
    """The addresses ``runserver host:port`` serves (a wildcard host is reached on 127.0.0.1)."""
    shown = "127.0.0.1" if host in WILDCARD_HOSTS else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    base = f"http://{shown}:{port}"
    return {"admin": f"{base}/admin/", "api_docs": f"{base}/api/docs", "dashboard": f"{base}/dashboard/"}


def demo_copy_refresh(*, source: Path, target: Path, reset: bool = False) -> Path:
    """Make ``target`` a copy of the demo book ``source``: its author files replaced by the source's,
    what the demo wrote there (``WRITTEN``) kept unless ``reset``. Returns ``target``."""
    if not (source / "book.yaml").is_file():
        raise CommandError(f"找不到演示书：{source} 下没有 book.yaml")
    target.mkdir(parents=True, exist_ok=True)
    for child in target.iterdir():
        if child.name in WRITTEN and not reset:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*WRITTEN))
    return target


@transaction.atomic
def admin_ensure(*, username: str, password: str | None) -> tuple[bool, str | None]:
    """Make ``username`` an active superuser. Returns (created, password to show or None).

    A new user gets ``password`` or a generated one (shown once); an existing user's password is
    changed only when ``password`` is given."""
    users = get_user_model()
    user = users.objects.filter(username=username).first()
    if user is None:
        shown = password or secrets.token_urlsafe(12)
        users.objects.create_superuser(username=username, email="", password=shown)
        return True, None if password else shown
    user.is_staff = user.is_superuser = user.is_active = True
    if password:
        user.set_password(password)
    user.save()
    return False, None


@transaction.atomic
def demo_key_rotate(*, book: Book) -> tuple[ApiKey, str, list[str]]:
    """Revoke the previous demo key(s) of ``book`` and create a fresh read+write one.

    Returns the new key, its raw value and the prefixes of the keys it revoked (to say so)."""
    previous = ApiKey.objects.filter(book=book, name=DEMO_KEY_NAME, revoked=False)
    revoked = list(previous.order_by("created_at").values_list("prefix", flat=True))
    previous.update(revoked=True)
    key, raw = apikey_create(name=DEMO_KEY_NAME, scope=ApiKey.Scope.WRITE, book=book)
    return key, raw, revoked


class Command(BookCommand):
    help = (
        "演示环境：把 examples/demo-book 复制到 var/demo-book 并重建，导入 examples/demo-extractions 的示例抽取，确保管理员账号，"
        "创建演示 API 密钥并打印访问地址（可重复运行）。"
    )

    book_argument = None  # always the demo book
    json_help = "以 JSON 输出结果"

    def add_command_arguments(self, parser):
        parser.add_argument(
            "--reset", action="store_true", help="丢弃 var/demo-book 里演示写下的日志与设定，从示例重新复制"
        )
        parser.add_argument("--no-key", action="store_true", help="不创建演示 API 密钥")
        parser.add_argument("--host", default="127.0.0.1", help="打印地址用的主机（make run 传入 HOST）")
        parser.add_argument("--port", type=int, default=8000, help="打印地址用的端口（make run 传入 PORT）")

    def handle(self, *args, **options):
        root = demo_copy_refresh(source=DEMO_SOURCE, target=DEMO_BOOK, reset=options["reset"])
        report = book_rebuild(root=root)
        if not report["ok"]:
            problems = "；".join(e.get("message", str(e)) for e in report["errors"])
            raise CommandError(f"演示书重建失败：{problems}")
        book = Book.objects.get(slug=report["book"])
        try:
            ingested = demo_extractions_ingest(book=book)
        except DomainError as exc:
            raise CommandError(f"示例抽取导入失败：{exc.message}") from exc
        extractions = {
            "chapters": [r["chapter"] for r in ingested],
            "warnings": sum(len(r["warnings"]) for r in ingested),
            "pending": PendingItem.objects.filter(book=book, status=PendingItem.Status.PENDING).count(),
        }
        # the database's own count: the rebuild's counts the declared entities, not those its chapters' tags add
        entities = book.entities.count()
        username = os.environ.get("WEBNOVEL_ADMIN_USER") or "admin"
        created, password = admin_ensure(username=username, password=os.environ.get("WEBNOVEL_ADMIN_PASSWORD"))
        key = raw = None
        revoked: list[str] = []
        if not options["no_key"]:
            key, raw, revoked = demo_key_rotate(book=book)
        urls = urls_for(host=options["host"], port=options["port"])
        result = {
            "book": book.slug,
            "counts": {**report["counts"], "entities": entities},
            "warnings": len(report["warnings"]),
            "extractions": extractions,
            "admin": {"username": username, "created": created, "password": password},
            "api_key": {"prefix": key.prefix, "key": raw, "scope": key.scope, "revoked": revoked} if key else None,
            "urls": urls,
        }
        if options["json"]:
            self.emit(result, None, options)
            return
        counts = report["counts"]
        lines = [
            f"演示书 {book.slug}《{book.title}》已重建：{counts['chapters']} 章，{counts['threads']} 条线索，"
            f"{entities} 个实体，警告 {len(report['warnings'])} 条",
            f"示例抽取已导入：第{'、'.join(map(str, extractions['chapters']))}章，"
            f"抽取警告 {extractions['warnings']} 条，待确认 {extractions['pending']} 项",
        ]
        if password:
            lines.append(f"已创建管理员 {username}，密码（只显示这一次）：{password}")
        elif created:
            lines.append(f"已创建管理员 {username}（密码取自 WEBNOVEL_ADMIN_PASSWORD）")
        else:
            lines.append(
                f"管理员 {username} 已存在"
                + (
                    "，密码已按 WEBNOVEL_ADMIN_PASSWORD 更新"
                    if os.environ.get("WEBNOVEL_ADMIN_PASSWORD")
                    else "，密码未改动"
                )
            )
        if raw:
            lines.append(f"演示 API 密钥（读写，仅限 {book.slug}）：{raw}")
            if revoked:
                shown = "、".join(f"{p}…" for p in revoked)
                lines.append(f"注意：上次打印的演示密钥 {shown} 已吊销，请改用上面的新密钥（--no-key 可保留旧密钥）")
        lines += [f"管理后台  {urls['admin']}", f"API 文档  {urls['api_docs']}", f"仪表盘    {urls['dashboard']}"]
        self.stdout.write("\n".join(lines))
