"""``python manage.py import_txt <novel.txt> <out_dir>`` — turn a plain-text novel into a book folder."""

import io
import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.core.validators import validate_unicode_slug

from bookfiles.importers.folder import txt_book_write
from bookfiles.importers.txt import txt_decode, txt_parse
from core.commands import BookCommand, json_render
from kernel.safefs import regular_file_read

# A 20-million-character novel is ~60 MB of UTF-8; past this it is not a novel (or not one file).
TXT_MAX_BYTES = 256 * 1024 * 1024


class Command(BookCommand):
    help = "把 txt 小说切分成章节，生成书籍文件夹（book.yaml + 定稿/正文/）。规则见 docs/import.md。"
    book_argument = None  # it makes a book folder; no book exists yet
    json_help = "以 JSON 输出报告"

    def add_command_arguments(self, parser):
        parser.add_argument("source", help="txt 文件路径（UTF-8 含/不含 BOM，或 GB18030）")
        parser.add_argument("out_dir", help="输出的书籍文件夹（须不存在或为空，除非 --force）")
        parser.add_argument("--slug", help="写入 book.yaml 的 slug（默认：文件夹名）")
        parser.add_argument("--title", help="书名（默认：正文开头的《书名》行，否则 txt 文件名）")
        parser.add_argument("--force", action="store_true", help="输出文件夹非空时仍写入：替换 book.yaml 与 定稿/")
        parser.add_argument("--renumber", action="store_true", help="按出现顺序重新编号 1..N（章节号重复时必须）")
        parser.add_argument("--dry-run", action="store_true", help="只报告切分结果，不写文件")
        parser.add_argument(
            "--discover",
            action="store_true",
            help="写完后 rebuild 并运行 discover：从正文发现角色 / 地点 / 势力放入待确认队列（见 docs/discovery.md）",
        )

    def handle(self, *args, **options):
        source = Path(options["source"]).expanduser()
        out_dir = Path(options["out_dir"]).expanduser()
        if not source.is_file():
            raise CommandError(f"找不到 txt 文件：{source}")
        if options["slug"]:
            try:
                validate_unicode_slug(options["slug"])
            except ValidationError as exc:
                raise CommandError(f"slug 不合法：{options['slug']}（只能含字母、数字、汉字、- 和 _）") from exc
        try:
            data, _mtime = regular_file_read(source, max_bytes=TXT_MAX_BYTES)
        except OSError as exc:
            raise CommandError(f"无法读取 txt 文件 {source}：{exc.strerror or exc}") from exc
        try:
            text, encoding = txt_decode(data)
        except UnicodeDecodeError as exc:
            raise CommandError(f"无法识别编码：{source}（支持 UTF-8、UTF-16 带 BOM、GB18030）") from exc
        book = txt_parse(text, renumber=options["renumber"])
        title = options["title"] or book.title or source.stem
        report = {"source": str(source), "out_dir": str(out_dir), "encoding": encoding, **book.report()}
        report["title"] = title
        if not book.chapters:
            self._emit(report, options)
            raise CommandError(f"没有找到章节标题：{source}（标题规则见 docs/import.md）")
        if book.out_of_range:
            self._emit(report, options)
            first = book.out_of_range[0]
            raise CommandError(
                f"{source}:{first.line}：{first.reason}：{first.text}"
                + (f"（另有 {len(book.out_of_range) - 1} 处）" if len(book.out_of_range) > 1 else "")
                + ("" if options["renumber"] else "；章节号可加 --renumber 按出现顺序重新编号")
            )
        if book.duplicates and not options["renumber"]:
            self._emit(report, options)
            numbers = "、".join(str(n) for n in book.duplicates)
            raise CommandError(f"章节编号重复：{numbers}；加 --renumber 按出现顺序重新编号")
        report["files"] = []
        if not options["dry_run"]:
            report["files"] = txt_book_write(
                book=book,
                out_dir=out_dir,
                title=title,
                slug=options["slug"],
                source=source.name,
                encoding=encoding,
                force=options["force"],
            )
        if options["discover"] and not options["dry_run"]:
            # By command name, not import: discovery lives in the entities app, above this one.
            slug = options["slug"] or out_dir.resolve().name
            if options["json"]:
                rebuilt, found = io.StringIO(), io.StringIO()
                call_command("rebuild", str(out_dir), "--json", stdout=rebuilt)
                call_command("discover", slug, "--json", stdout=found)
                report["discovery"] = json.loads(found.getvalue())
            else:
                self._emit(report, options)
                call_command("rebuild", str(out_dir), stdout=self.stdout)
                call_command("discover", slug, stdout=self.stdout)
                return
        self._emit(report, options)

    def _emit(self, report: dict, options: dict) -> None:
        if options["json"]:
            self.stdout.write(json_render(report))
            return
        lines = [
            f"《{report['title']}》 编码 {report['encoding']}，{report['chapters']} 章"
            f"（第{report['first_chapter']}–{report['last_chapter']}章，标记「{report['heading_marker']}」），"
            f"正文 {report['characters']} 字",
        ]
        for volume in report["volumes"]:
            lines.append(f"  第{volume['number']}卷 {volume['name']}：章节 {volume['chapters']}")
        if report["gaps"]:
            shown = "、".join(str(a) if a == b else f"{a}–{b}" for a, b in report["gaps"])
            more = "……" if sum(b - a + 1 for a, b in report["gaps"]) < report["missing"] else ""
            lines.append(f"缺号 {report['missing']} 个：{shown}{more}")
        if report["duplicates"]:
            lines.append("重号：" + "、".join(str(n) for n in report["duplicates"]))
        if report["toc_skipped"]:
            lines.append(f"跳过目录中的空标题 {report['toc_skipped']} 个")
        if report["preface_characters"]:
            lines.append(f"前言 {report['preface_characters']} 字 → 定稿/前言.md")
        for item in report["rejected"]:
            lines.append(f"未当作标题（第{item['line']}行，{item['reason']}）：{item['text']}")
        if report.get("files"):
            lines.append(f"已写入 {len(report['files'])} 个文件到 {report['out_dir']}")
        elif options.get("dry_run"):
            lines.append("（--dry-run：未写文件）")
        self.stdout.write("\n".join(lines))
