"""``python manage.py memory_export <book> [--out FILE]`` — the plugin's memory_scratchpad.json."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.selectors import book_get
from kernel.exceptions import DomainError
from kernel.safefs import file_write
from memory.selectors import scratchpad_export


class Command(BaseCommand):
    help = "导出记忆为插件格式的 memory_scratchpad.json（默认输出到标准输出）。"

    def add_arguments(self, parser):
        parser.add_argument("book", help="书籍 slug")
        parser.add_argument("--out", type=Path, help="写入此文件（如 <书>/.webnovel/memory_scratchpad.json）")

    def handle(self, *args, **options):
        try:
            data = scratchpad_export(book=book_get(slug=options["book"]))
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        text = json.dumps(data, ensure_ascii=False, indent=2)
        if options["out"]:
            try:
                options["out"].parent.mkdir(parents=True, exist_ok=True)
                file_write(path=options["out"], text=text + "\n")  # atomic; a symlink at the target is refused
            except DomainError as exc:
                raise CommandError(exc.message) from exc
            except OSError as exc:
                raise CommandError(f"无法写入 {options['out']}：{exc.strerror or exc}") from exc
            count = sum(len(v) for v in data.values())
            self.stdout.write(json.dumps({"file": str(options["out"]), "facts": count}, ensure_ascii=False))
        else:
            self.stdout.write(text)
