"""``python manage.py memory_export <book> [--out FILE]`` — the plugin's memory_scratchpad.json."""

from pathlib import Path

from django.core.management.base import CommandError

from core.commands import BookCommand, json_render
from kernel.safefs import file_write
from memory.selectors import scratchpad_export


class Command(BookCommand):
    help = "导出记忆为插件格式的 memory_scratchpad.json（默认输出到标准输出）。"

    json_default = True  # the scratchpad itself is JSON; so is the line saying where it was written

    def add_command_arguments(self, parser):
        parser.add_argument("--out", type=Path, help="写入此文件（如 <书>/.webnovel/memory_scratchpad.json）")

    def handle(self, *args, **options):
        data = scratchpad_export(book=self.book_get(options))
        text = json_render(data)
        if options["out"]:
            try:
                options["out"].parent.mkdir(parents=True, exist_ok=True)
                file_write(path=options["out"], text=text + "\n")  # atomic; a symlink at the target is refused
            except OSError as exc:
                raise CommandError(f"无法写入 {options['out']}：{exc.strerror or exc}") from exc
            count = data["meta"]["facts"]
            self.emit({"file": str(options["out"]), "facts": count}, None, options, indent=None)
        else:
            self.stdout.write(text)
