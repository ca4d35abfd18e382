"""``python manage.py ingest <book> <chapter> <file.json>`` — ingest a Data Agent extraction."""

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.selectors import book_get
from entities.services.ingest import extraction_ingest, extraction_parse
from kernel.exceptions import DomainError


class Command(BaseCommand):
    help = "导入一章的抽取 JSON（与 POST /api/books/{book}/chapters/{n}/extraction 相同）；输出 JSON 结果。"
    # Called by agents before and after every chapter: skip the system checks (they import the whole URL
    # conf and API, a third of the command's start); `manage.py check`, migrate and the server run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("book", help="书籍 slug")
        parser.add_argument("chapter", type=int, help="章节号")
        parser.add_argument("file", help="抽取 JSON 文件路径（- 表示标准输入）")

    def handle(self, *args, **options):
        path = options["file"]
        try:
            raw = sys.stdin.read() if path == "-" else Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"无法读取 {path}：{exc}") from exc
        try:
            payload = extraction_parse(raw=raw)
            result = extraction_ingest(book=book_get(slug=options["book"]), chapter=options["chapter"], payload=payload)
        except DomainError as exc:
            detail = json.dumps(exc.extra, ensure_ascii=False) if exc.extra else ""
            raise CommandError(f"{exc.message} {detail}".strip()) from exc
        self.stdout.write(json.dumps(result, ensure_ascii=False, indent=2))
        if result.get("hook_failures"):
            raise CommandError(f"抽取已保存，但提交后的更新失败：{result['hook_failures'][0]['message']}")
