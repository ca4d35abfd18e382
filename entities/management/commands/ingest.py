"""``python manage.py ingest <book> <chapter> <file.json>`` — ingest a Data Agent extraction."""

import sys
from pathlib import Path

from django.core.management.base import CommandError

from core.commands import BookCommand, json_render
from entities.services.ingest import extraction_ingest, extraction_parse


class Command(BookCommand):
    help = "导入一章的抽取 JSON（与 POST /api/books/{book}/chapters/{n}/extraction 相同）；输出 JSON 结果。"
    json_default = True  # agents read the result after every chapter
    # Called by agents before and after every chapter: skip the system checks (they import the whole URL
    # conf and API, a third of the command's start); `manage.py check`, migrate and the server run them.
    requires_system_checks: list[str] = []

    def add_command_arguments(self, parser):
        parser.add_argument("chapter", type=int, help="章节号")
        parser.add_argument("file", help="抽取 JSON 文件路径（- 表示标准输入）")

    def handle(self, *args, **options):
        path = options["file"]
        try:
            raw = sys.stdin.read() if path == "-" else Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"无法读取 {path}：{exc}") from exc
        payload = extraction_parse(raw=raw)
        result = extraction_ingest(book=self.book_get(options), number=options["chapter"], payload=payload)
        self.stdout.write(json_render(result))
        if result.get("hook_failures"):  # warn only (exit 0), as the seed's hooks: the extraction is saved
            self.stderr.write(f"警告：抽取已保存，但提交后的更新失败：{result['hook_failures'][0]['message']}")
