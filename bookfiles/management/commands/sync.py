"""``python manage.py sync <book>`` — re-index only the files that changed since the last rebuild/sync."""

import json

from django.core.management.base import BaseCommand, CommandError

from bookfiles.management.commands._report import hook_failures_check, report_text
from bookfiles.rebuilder import book_sync
from core.selectors import book_get
from kernel.exceptions import DomainError


class Command(BaseCommand):
    help = "同步一本书：只重读内容哈希有变化（或新增）的文件，删除已删文件的数据；book.yaml 变化时整本重建。"
    # Called by agents before and after every chapter: skip the system checks (they import the whole URL
    # conf and API, a third of the command's start); `manage.py check`, migrate and the server run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("book", help="书籍 slug")
        parser.add_argument(
            "--replace",
            "--force",
            dest="replace",
            action="store_true",
            help="确认替换：允许从另一个文件夹重建已有的书，或删除超过一半的章节（默认拒绝并列出将删除的内容）",
        )
        parser.add_argument("--json", action="store_true", help="以 JSON 输出报告")

    def handle(self, *args, **options):
        try:
            book = book_get(slug=options["book"])
            report = book_sync(book=book, replace=options["replace"])
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(report_text(report, action="同步"))
        if not report["ok"]:
            raise CommandError(f"同步失败：{len(report['errors'])} 个错误，数据库未改动")
        hook_failures_check(report, action="同步")
