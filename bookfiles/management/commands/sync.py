"""``python manage.py sync <book>`` — re-index only the files that changed since the last rebuild/sync."""

from bookfiles.management.commands._report import report_finish
from bookfiles.rebuilder import book_sync
from core.commands import BookCommand


class Command(BookCommand):
    help = "同步一本书：只重读内容哈希有变化（或新增）的文件，删除已删文件的数据；book.yaml 变化时整本重建。"
    json_help = "以 JSON 输出报告"
    # Called by agents before and after every chapter: skip the system checks (they import the whole URL
    # conf and API, a third of the command's start); `manage.py check`, migrate and the server run them.
    requires_system_checks: list[str] = []

    def add_command_arguments(self, parser):
        parser.add_argument(
            "--replace",
            "--force",
            dest="replace",
            action="store_true",
            help="确认替换：允许从另一个文件夹重建已有的书，或删除超过一半的章节（默认拒绝并列出将删除的内容）",
        )

    def handle(self, *args, **options):
        report = book_sync(book=self.book_get(options), replace=options["replace"])
        report_finish(self, report, options, action="同步")
