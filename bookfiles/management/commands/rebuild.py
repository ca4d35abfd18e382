"""``python manage.py rebuild <book_dir>`` — rebuild a book's tables from its folder."""

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from bookfiles.management.commands._report import hook_failures_check, report_text
from bookfiles.rebuilder import book_rebuild
from kernel.exceptions import DomainError


class Command(BaseCommand):
    help = "从书籍文件夹整本重建数据库（单一事务：有错误则不改动任何数据）。"

    def add_arguments(self, parser):
        parser.add_argument("book_dir", help="书籍文件夹路径（含 book.yaml）；也可只写 WEBNOVEL_BOOKS_DIR 下的文件夹名")
        parser.add_argument(
            "--replace",
            "--force",
            dest="replace",
            action="store_true",
            help="确认替换：允许从另一个文件夹重建已有的书，或删除超过一半的章节（默认拒绝并列出将删除的内容）",
        )
        parser.add_argument("--json", action="store_true", help="以 JSON 输出报告")

    def handle(self, *args, **options):
        root = Path(options["book_dir"]).expanduser()
        if not root.is_dir() and (Path(settings.WEBNOVEL_BOOKS_DIR) / options["book_dir"]).is_dir():
            root = Path(settings.WEBNOVEL_BOOKS_DIR) / options["book_dir"]  # a bare folder name
        if not root.is_dir():
            raise CommandError(f"书籍文件夹不存在：{root}")
        try:
            report = book_rebuild(root=root.resolve(), replace=options["replace"])
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(report_text(report, action="重建"))
        if not report["ok"]:
            raise CommandError(f"重建失败：{len(report['errors'])} 个错误，数据库未改动")
        hook_failures_check(report, action="重建")
