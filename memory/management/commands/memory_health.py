"""``python manage.py memory_health <book>`` — overdue open loops, contradictions, drifted constraints."""

from core.commands import BookCommand
from memory.pipeline import memory_refresh
from memory.selectors import memory_health


class Command(BookCommand):
    help = "记忆健康报告：超期的未决线索、矛盾待裁决的事实、偏离的约束（JSON）。"

    json_default = True

    def add_command_arguments(self, parser):
        parser.add_argument("--chapter", type=int, help="以此章为当前章（默认最新定稿章）")
        parser.add_argument("--refresh", action="store_true", help="先重新派生全部记忆（重建后首次使用时）")

    def handle(self, *args, **options):
        book = self.book_get(options)
        chapter = self.number_check(options["chapter"], what="--chapter 章节号")
        if options["refresh"]:
            memory_refresh(book=book)
        self.emit(memory_health(book=book, chapter=chapter), None, options)
