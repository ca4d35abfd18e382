"""``python manage.py story_system "玄幻退婚流" [--genre G] [--book B | --story-root DIR] [--chapter N]
[--csv-dir DIR] [--persist]`` — the seed's options (``--csv-dir``, ``--story-root``, ``--chapter
chapter_015``) alongside ours."""

import re
from pathlib import Path

from django.core.management.base import CommandError

from core.commands import BookCommand, json_render
from storysystem import markdown, services
from storysystem.storydict import story_system_build

# chapter_015 (the seed's file stem), 15, 第15章
_CHAPTER = re.compile(r"^(?:chapter_0*(\d+)|0*(\d+)|第\s*0*(\d+)\s*章)$")


def _chapter(value: str) -> int:
    match = _CHAPTER.match(value.strip())
    if not match:
        raise CommandError(f"--chapter 应为章号，如 15、chapter_015 或 第15章（收到 {value}）")
    return BookCommand.number_check(int(next(g for g in match.groups() if g is not None)), what="--chapter 章号")


def _pair(value: str) -> tuple[str, str]:
    if "=" not in value:
        raise CommandError(f"--set 需要 字段=值 的形式（收到 {value}）")
    name, _, text = value.partition("=")
    return name.strip(), text.strip()


class Command(BookCommand):
    help = "为一本书生成故事系统设定（StorySystemDict）。默认只打印；--persist 才写入数据库和书籍文件夹。"
    book_argument = None  # the query comes first; the book is optional (--book or --story-root)
    json_default = True  # --format markdown|both (below) is this command's text output

    def add_command_arguments(self, parser):
        parser.add_argument("query", help="题材或调性描述，如「玄幻退婚流」「压抑一点，后面爆」")
        parser.add_argument("--genre", help="显式题材，优先于从查询词推断")
        parser.add_argument("--book", help="书籍 slug（--persist 与 --chapter 需要 --book 或 --story-root）")
        parser.add_argument(
            "--story-root", help="书籍文件夹（.story-system/ 所在处）：代替 --book 指定书籍（该文件夹须已 rebuild）"
        )
        parser.add_argument(
            "--chapter", type=_chapter, help="章号（15、chapter_015 或 第15章）：生成该章在总设定之上的章节设定"
        )
        parser.add_argument(
            "--csv-dir",
            help="参考资料 CSV 目录：先以目录名为资料库名导入（幂等：未变的行不动），再生成；其余已启用的资料库照常参与",
        )
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
        if (options["persist"] or options["chapter"] is not None) and not (options["book"] or options["story_root"]):
            raise CommandError("--persist 与 --chapter 需要 --book <slug>（或 --story-root <书籍文件夹>）")
        overrides = dict(_pair(v) for v in options["set"])
        book = self.book_get(options, "book") if options["book"] else None
        if options["story_root"]:
            at_root = self.book_at(options["story_root"])
            if book is not None and book.pk != at_root.pk:
                raise CommandError(
                    f"--book {book.slug} 与 --story-root {options['story_root']}（《{at_root.title or at_root.slug}》）"
                    "不是同一本书"
                )
            book = at_root
        if options["csv_dir"]:
            report = services.references_import(directory=Path(options["csv_dir"]))
            self.stderr.write(
                f"资料库 {report['library']}：新增 {report['created']}，更新 {report['updated']}，"
                f"未变 {report['unchanged']}"
            )
        if options["chapter"] is not None:
            data, files = services.story_chapter_build(
                book=book,
                number=options["chapter"],
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
        if options["format"] in ("json", "both"):
            self.stdout.write(json_render(data))
        if options["format"] in ("markdown", "both"):
            self.stdout.write(markdown.story_markdown(data))
        for path in files:
            self.stderr.write(f"已写入 {path}")
