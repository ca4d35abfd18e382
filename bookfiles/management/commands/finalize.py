"""``python manage.py finalize <book> <chapter>`` — index one finalized chapter (and changed settings files)."""

from bookfiles.management.commands._report import report_finish
from bookfiles.rebuilder import chapter_finalize
from core.commands import BookCommand


class Command(BookCommand):
    help = "定稿一章：只重读该章文件与有变化的线索/信息差/设定/大纲/时间线文件，只更新受影响的行。"
    json_help = "以 JSON 输出报告"
    # Called by agents before and after every chapter: skip the system checks (they import the whole URL
    # conf and API, a third of the command's start); `manage.py check`, migrate and the server run them.
    requires_system_checks: list[str] = []

    def add_command_arguments(self, parser):
        parser.add_argument("chapter", type=int, help="章节号（如 25）")

    def handle(self, *args, **options):
        number = self.number_check(options["chapter"])
        report = chapter_finalize(book=self.book_get(options), number=number)
        report_finish(self, report, options, action=f"定稿第{number}章", short="定稿")
