"""``python manage.py finalize <book> <chapter>`` — index one finalized chapter (and changed settings files)."""

import json

from django.core.management.base import BaseCommand, CommandError

from bookfiles.management.commands._report import hook_failures_check, report_text
from bookfiles.rebuilder import chapter_finalize
from core.selectors import book_get
from kernel.bounds import NUMBER_MAX
from kernel.exceptions import DomainError


class Command(BaseCommand):
    help = "定稿一章：只重读该章文件与有变化的线索/信息差/设定/大纲/时间线文件，只更新受影响的行。"
    # Called by agents before and after every chapter: skip the system checks (they import the whole URL
    # conf and API, a third of the command's start); `manage.py check`, migrate and the server run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("book", help="书籍 slug")
        parser.add_argument("chapter", type=int, help="章节号（如 25）")
        parser.add_argument("--json", action="store_true", help="以 JSON 输出报告")

    def handle(self, *args, **options):
        if not 1 <= options["chapter"] <= NUMBER_MAX:
            raise CommandError(f"章节号必须是 1…{NUMBER_MAX:,} 的整数：{options['chapter']}")
        try:
            book = book_get(slug=options["book"])
            report = chapter_finalize(book=book, number=options["chapter"])
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(report_text(report, action=f"定稿第{options['chapter']}章"))
        if not report["ok"]:
            raise CommandError(f"定稿失败：{len(report['errors'])} 个错误，数据库未改动")
        hook_failures_check(report, action="定稿")
