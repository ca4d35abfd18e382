"""``python manage.py context <book> <chapter>`` — the context pack before a chapter."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from core.selectors import book_get
from kernel.bounds import NUMBER_MAX
from kernel.exceptions import DomainError
from memory import orchestrator
from memory.interfaces import context_pack
from memory.services import memory_hit_record


class Command(BaseCommand):
    help = "输出写作/审阅/查询某章前的上下文包，并记入记忆命中日志。用 --diff 比较两章的包。"
    # Called by agents before and after every chapter: skip the system checks (they import the whole URL
    # conf and API, a third of the command's start); `manage.py check`, migrate and the server run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("book", help="书籍 slug")
        parser.add_argument("chapter", type=int, help="章节号")
        parser.add_argument("--task", choices=orchestrator.TASKS, default="write", help="任务：write | review | query")
        parser.add_argument(
            "--budget", type=int, default=orchestrator.DEFAULT_BUDGET, help="token 预算（默认 %(default)s）"
        )
        parser.add_argument("--format", choices=("json", "text"), default="text", help="输出格式（默认 text）")
        parser.add_argument("--query", default="", help="查询文本（task=query 时用于检索）")
        parser.add_argument("--mode", choices=("full", "simple"), default=None, help="simple：关闭记忆，只用大纲与近章")
        parser.add_argument("--diff", type=int, metavar="CHAPTER", help="与另一章的上下文包比较（输出 JSON）")
        parser.add_argument("--no-log", action="store_true", help="不记入记忆命中日志")

    def handle(self, *args, **options):
        for name in ("chapter", "diff"):
            # past 64 bits the number reaches the database as OverflowError: refuse it at the door
            if options[name] is not None and not 1 <= options[name] <= NUMBER_MAX:
                raise CommandError(f"章节号必须是 1…{NUMBER_MAX:,} 的整数：{options[name]}")
        try:
            book = book_get(slug=options["book"])
            if options["diff"] is not None:
                result = orchestrator.pack_diff(
                    book=book,
                    chapter_a=options["chapter"],
                    chapter_b=options["diff"],
                    task=options["task"],
                    budget_tokens=options["budget"],
                )
                self.stdout.write(json.dumps(result, ensure_ascii=False, indent=2))
                return
            pack = context_pack(
                book=book,
                number=options["chapter"],
                task=options["task"],
                budget=options["budget"],
                query=options["query"],
                mode=options["mode"],
            )
            if not options["no_log"]:
                memory_hit_record(book=book, pack=pack)
        except DomainError as exc:
            sys.stderr.write(json.dumps(exc.as_dict(), ensure_ascii=False) + "\n")
            raise CommandError(exc.message) from exc
        if options["format"] == "json":
            self.stdout.write(json.dumps(pack, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(orchestrator.pack_text(pack))
