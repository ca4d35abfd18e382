"""``python manage.py embed <book>`` — make the vectors a book's semantic recall needs (only what is missing)."""

import sys

from django.core.management.base import CommandError

from core.commands import BookCommand
from recall.pipeline import vectors_ensure


class Command(BookCommand):
    help = "为语义检索嵌入全书片段（章节摘要与正文片段）：只嵌入尚无向量的文本，按文本哈希缓存。"

    def add_command_arguments(self, parser):
        parser.add_argument("--chapter", type=int, action="append", help="只嵌入这一章（可重复）；默认全书")
        parser.add_argument(
            "--workers",
            type=int,
            help="嵌入较多文本时并行的进程数（每个进程一个引擎线程）；默认 WEBNOVEL_RECALL_WORKERS（本机最多 2）",
        )

    def handle(self, *args, **options):
        book = self.book_get(options)
        numbers = options["chapter"]

        def progress(done: int, total: int) -> None:
            if done == total or done % 320 == 0:
                print(f"已嵌入 {done}/{total}", file=sys.stderr, flush=True)

        if options["workers"] is not None and options["workers"] < 1:
            raise CommandError(f"--workers 必须是正整数（收到 {options['workers']}）")
        result = vectors_ensure(book=book, numbers=numbers, progress=progress, workers=options["workers"])
        if result.get("skipped"):
            text = f"未嵌入：{result['skipped']}"
        else:
            text = (
                f"{book.slug}：{result['windows']} 个片段，新嵌入 {result['embedded']} 个，"
                f"用时 {result['seconds']} 秒（模型 {result['model']}）"
            )
        self.emit(result, text, options)
