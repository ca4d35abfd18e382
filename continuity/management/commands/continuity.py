"""``python manage.py continuity <book> <draft.md | -> [--chapter N] [--json]`` — the continuity check (机检).

Also ``--from K [--to M]`` (finalized chapters after a retcon) and ``--waive`` (mark a finding intended)."""

import sys
from pathlib import Path

from django.core.management.base import CommandError

from continuity.selectors import chapters_check, draft_check
from continuity.services import waiver_add
from core.commands import BookCommand

SEVERITY_LABELS = {"error": "错误", "warning": "警告", "info": "提示"}


def finding_text(item: dict) -> list[str]:
    ev = item["evidence"]
    where = "，".join(
        p
        for p in (
            f"第{ev['chapter']}章" if ev.get("chapter") else "",
            (ev.get("file") or "") + (f":{ev['line']}" if ev.get("line") else ""),
        )
        if p
    )
    label = "已豁免" if item["waived"] else SEVERITY_LABELS[item["severity"]]
    lines = [
        f"  第{item['line']}行 [{label}·{item['kind_label']}] {item['message']}",
        f"      原文：{item['quote']}",
        f"      依据：{ev.get('fact', '')}" + (f"（{where}）" if where else ""),
        f"      建议：{item['suggestion']}",
    ]
    if item["waived"]:
        lines.append(f"      豁免：{item.get('waiver_note', '')}")
    return lines


def counts_text(counts: dict) -> str:
    return f"错误 {counts['error']}，警告 {counts['warning']}，提示 {counts['info']}，已豁免 {counts['waived']}"


class Command(BookCommand):
    help = (
        "机检：草稿对照截至第 N−1 章的设定与状态（与 POST /api/books/{book}/continuity 相同）；"
        "--from K 复查已定稿章节（与 story continuity-chapters 相同）；--waive 标记某条结果为有意安排。"
        "有错误时退出码为 1。"
    )
    requires_system_checks: list[str] = []
    json_help = "输出 JSON（给智能体）"

    def add_command_arguments(self, parser):
        parser.add_argument("draft", nargs="?", help="草稿文件（Markdown + front matter；- 表示标准输入）")
        parser.add_argument(
            "--chapter", type=int, help="草稿的章节号 N（默认：front matter 的 chapter，否则最后一章 + 1）"
        )
        parser.add_argument("--from", dest="start", type=int, help="复查已定稿章节：起始章 K")
        parser.add_argument("--to", dest="end", type=int, help="复查已定稿章节：结束章 M（默认最后一章）")
        parser.add_argument("--waive", metavar="KIND:TERM", help="豁免第 --chapter 章中 kind 与 term 相同的结果")
        parser.add_argument("--note", default="", help="豁免的说明（--waive 时）")

    def handle(self, *args, **options):
        book = self.book_get(options)
        for name in ("chapter", "start", "end"):
            self.number_check(options[name])
        if options["waive"]:
            kind, _, term = options["waive"].partition(":")
            if options["chapter"] is None:
                raise CommandError("--waive 需要 --chapter N")
            result = waiver_add(book=book, number=options["chapter"], kind=kind, term=term, note=options["note"])
            self.emit(result, f"已豁免第{options['chapter']}章的 {kind}「{term}」，写入 {result['file']}", options)
            return
        if options["start"] is not None:
            result = chapters_check(book=book, start=options["start"], end=options["end"])
        elif options["draft"]:
            path = options["draft"]
            try:
                text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8-sig")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"无法读取草稿 {path}：{exc}") from exc
            result = draft_check(book=book, text=text, chapter=options["chapter"])
        else:
            raise CommandError("需要草稿文件（或 -），或 --from K")
        self.emit(result, self._text(result), options)
        if result["counts"]["error"]:
            sys.exit(1)

    def _text(self, result: dict) -> str:
        if "chapters" in result:
            lines = [f"机检《{result['book']}》第{result['from']}–{result['to']}章：{counts_text(result['counts'])}"]
            for chapter in result["chapters"]:
                lines.append(f"第{chapter['chapter']}章（{chapter['file']}）：{counts_text(chapter['counts'])}")
                for item in chapter["findings"]:
                    lines += finding_text(item)
        else:
            lines = [
                f"机检《{result['book']}》第{result['chapter']}章草稿（对照截至第{result['as_of']}章）：{counts_text(result['counts'])}"
            ]
            for item in result["findings"]:
                lines += finding_text(item)
        lines += [f"注意：{p}" for p in result["problems"]]
        return "\n".join(lines)
