"""``python manage.py dump_book <slug>`` — the canonical, deterministic dump of a book's tables."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from bookfiles.rebuilder import book_dump
from core.selectors import book_get
from kernel.exceptions import DomainError
from kernel.safefs import file_write


class Command(BaseCommand):
    help = "输出一本书所有由文件派生的数据（JSON，排序、无数据库 id 与时间戳），两次重建结果应逐字节相同。"

    def add_arguments(self, parser):
        parser.add_argument("book", help="书籍 slug")
        parser.add_argument("--output", "-o", help="写入该文件（默认输出到标准输出）")

    def handle(self, *args, **options):
        try:
            book = book_get(slug=options["book"])
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        text = book_dump(book=book)
        if options["output"]:
            path = Path(options["output"])
            try:
                file_write(path=path, text=text)
            except DomainError as exc:
                raise CommandError(exc.message) from exc
            self.stdout.write(f"已写入 {path}（{len(text.encode('utf-8'))} 字节）")
        else:
            self.stdout.write(text, ending="")
