"""``python manage.py story_system "玄幻退婚流" [--genre G] [--book B] [--chapter N] [--persist]``."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from storysystem import markdown, services
from storysystem.selectors import story_system_build
from webnovel.exceptions import DomainError
from webnovel.selectors import book_get


def _pair(value: str) -> tuple[str, str]:
    if "=" not in value:
        raise CommandError(f"--set 需要 字段=值 的形式（收到 {value}）")
    name, _, text = value.partition("=")
    return name.strip(), text.strip()


class Command(BaseCommand):
    help = "为一本书生成故事系统设定（StorySystemDict）。默认只打印；--persist 才写入数据库和书籍文件夹。"

    def add_arguments(self, parser):
        parser.add_argument("query", help="题材或调性描述，如「玄幻退婚流」「压抑一点，后面爆」")
        parser.add_argument("--genre", help="显式题材，优先于从查询词推断")
        parser.add_argument("--book", help="书籍 slug（--persist 与 --chapter 必填）")
        parser.add_argument("--chapter", type=int, help="章号：生成该章在总设定之上的章节设定")
        parser.add_argument("--persist", action="store_true", help="写入数据库与 <书>/.story-system/ 文件")
        parser.add_argument(
            "--format", choices=["markdown", "json", "both"], default="json", help="输出格式（默认 json）"
        )
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="字段=值",
            help="显式设定字段，如 --set 节奏策略=慢热；列表字段用 | 分隔",
        )
        parser.add_argument("--add-anti-pattern", action="append", default=[], help="追加一条毒点（可重复）")
        parser.add_argument(
            "--remove-anti-pattern", action="append", default=[], help="删除毒点：章节一律拒绝（只增不减）"
        )

    def handle(self, *args, **options):
        if (options["persist"] or options["chapter"] is not None) and not options["book"]:
            raise CommandError("--persist 与 --chapter 需要 --book <slug>")
        overrides = dict(_pair(v) for v in options["set"])
        try:
            book = book_get(slug=options["book"]) if options["book"] else None
            if options["chapter"] is not None:
                data, files = services.story_chapter_build(
                    book=book,
                    chapter=options["chapter"],
                    query=options["query"],
                    genre=options["genre"],
                    overrides=overrides,
                    add_anti_patterns=options["add_anti_pattern"],
                    remove_anti_patterns=options["remove_anti_pattern"],
                    persist=options["persist"],
                )
            else:
                if options["remove_anti_pattern"]:
                    raise CommandError("--remove-anti-pattern 只对章节有意义（且总是被拒绝）；总设定请直接重建")
                if book is None:
                    data, files = (
                        story_system_build(
                            query=options["query"],
                            genre=options["genre"],
                            overrides=overrides,
                            add_anti_patterns=options["add_anti_pattern"],
                        ),
                        [],
                    )
                else:
                    data, files = services.story_master_build(
                        book=book,
                        query=options["query"],
                        genre=options["genre"],
                        overrides=overrides,
                        add_anti_patterns=options["add_anti_pattern"],
                        persist=options["persist"],
                    )
        except DomainError as exc:
            sys.stderr.write(json.dumps(exc.as_dict(), ensure_ascii=False, default=str) + "\n")
            raise CommandError(exc.message, returncode=exc.status_code // 100) from exc
        if options["format"] in ("json", "both"):
            self.stdout.write(json.dumps(data, ensure_ascii=False, indent=2))
        if options["format"] in ("markdown", "both"):
            self.stdout.write(markdown.story_markdown(data))
        for path in files:
            self.stderr.write(f"已写入 {path}")
