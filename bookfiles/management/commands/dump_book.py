"""``python manage.py dump_book <slug>`` — the canonical, deterministic dump of a book's tables."""

from pathlib import Path

from bookfiles.rebuilder import book_dump
from core.commands import BookCommand
from kernel.safefs import file_write


class Command(BookCommand):
    help = "输出一本书所有由文件夹派生的数据（作者的文件与 .journal/ 日志；JSON，排序、无数据库 id 与时间戳），两次重建结果应逐字节相同。"
    json_help = "与 --output 一起：以 JSON 报告写入的文件与字节数（转储本身总是 JSON）"

    def add_command_arguments(self, parser):
        parser.add_argument("--output", "-o", help="写入该文件（默认输出到标准输出）")

    def handle(self, *args, **options):
        text = book_dump(book=self.book_get(options))
        if not options["output"]:
            self.stdout.write(text, ending="")
            return
        path = Path(options["output"])
        file_write(path=path, text=text)
        size = len(text.encode("utf-8"))
        self.emit({"written": str(path), "bytes": size}, f"已写入 {path}（{size} 字节）", options)
