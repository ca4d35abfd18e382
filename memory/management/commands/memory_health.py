"""``python manage.py memory_health <book>`` — overdue open loops, contradictions, drifted constraints."""

import json

from django.core.management.base import BaseCommand, CommandError

from core.selectors import book_get
from kernel.exceptions import DomainError
from memory.pipeline import memory_refresh
from memory.selectors import memory_health


class Command(BaseCommand):
    help = "记忆健康报告：超期的未决线索、矛盾待裁决的事实、偏离的约束（JSON）。"

    def add_arguments(self, parser):
        parser.add_argument("book", help="书籍 slug")
        parser.add_argument("--chapter", type=int, help="以此章为当前章（默认最新定稿章）")
        parser.add_argument("--refresh", action="store_true", help="先重新派生全部记忆（重建后首次使用时）")

    def handle(self, *args, **options):
        try:
            book = book_get(slug=options["book"])
            if options["refresh"]:
                memory_refresh(book=book)
            report = memory_health(book=book, chapter=options["chapter"])
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(json.dumps(report, ensure_ascii=False, indent=2))
