"""``python manage.py rebuild <book>`` — rebuild a book's tables from its folder."""

from bookfiles.management.commands._report import report_finish
from bookfiles.rebuilder import book_rebuild
from core.commands import BookCommand


class Command(BookCommand):
    help = "从书籍文件夹整本重建数据库（单一事务：有错误则不改动任何数据）。"
    book_help = "书籍文件夹路径（含 book.yaml）；也可只写 WEBNOVEL_BOOKS_DIR 下的文件夹名，或已有书籍的 slug"
    json_help = "以 JSON 输出报告"

    def add_command_arguments(self, parser):
        parser.add_argument(
            "--replace",
            "--force",
            dest="replace",
            action="store_true",
            help="确认替换：允许从另一个文件夹重建已有的书，或删除超过一半的章节（默认拒绝并列出将删除的内容）",
        )

    def handle(self, *args, **options):
        root = self.book_root_get(options["book"])
        report = book_rebuild(root=root, replace=options["replace"])
        report_finish(self, report, options, action="重建")
