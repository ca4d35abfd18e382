"""``python manage.py rescan_mentions <book> [--from N] [--to M]`` — redo the mention scan."""

from core.commands import BookCommand
from entities.mentions import mentions_index


class Command(BookCommand):
    help = (
        "重新扫描章节中的实体提及（并重新应用手工标签）。在后台新增别名或合并实体后，"
        "用它让较早的章节也算上新名字。默认全书。"
    )

    json_default = True

    def add_command_arguments(self, parser):
        parser.add_argument("--from", dest="start", type=int, help="起始章（含）")
        parser.add_argument("--to", dest="end", type=int, help="结束章（含）")

    def handle(self, *args, **options):
        book = self.book_get(options)
        start = self.number_check(options["start"], what="--from 章节号")
        end = self.number_check(options["end"], what="--to 章节号")
        numbers = None
        if start is not None or end is not None:
            chapters = book.chapters.all()
            if start is not None:
                chapters = chapters.filter(number__gte=start)
            if end is not None:
                chapters = chapters.filter(number__lte=end)
            numbers = sorted(chapters.values_list("number", flat=True))
        result = mentions_index(book=book, numbers=numbers, removed=[])
        self.emit(
            {"book": book.slug, "chapters": "all" if numbers is None else len(numbers), **result},
            None,
            options,
            indent=None,
        )
