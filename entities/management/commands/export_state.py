"""``python manage.py export_state <book> [--write | --output PATH]`` — the slim state.json from the database."""

import json
from pathlib import Path

from django.core.management.base import CommandError
from django.utils import timezone

from core.commands import BookCommand
from entities.legacy_state import STATE_PATH, state_export
from kernel.safefs import book_file_write, file_write, path_inside


class Command(BookCommand):
    help = (
        "从数据库生成精简版 state.json。默认输出到标准输出；--write 写入 <书籍根目录>/.webnovel/state.json（先备份）。"
    )

    json_default = True  # the state itself is JSON; so is the line saying where it was written

    def add_command_arguments(self, parser):
        parser.add_argument(
            "--write", action="store_true", help="写入书籍根目录下的 .webnovel/state.json（已有则先备份）"
        )
        parser.add_argument("--output", help="写入这个路径（而不是标准输出）")

    def handle(self, *args, **options):
        book = self.book_get(options)
        state = state_export(book=book)
        text = json.dumps(state, ensure_ascii=False, indent=2) + "\n"
        target = (
            Path(options["output"])
            if options["output"]
            else (Path(book.root) / STATE_PATH if options["write"] else None)
        )
        if target is None:
            self.stdout.write(text, ending="")
            return
        try:
            if options["output"]:
                file_write(path=target, text=text)
            else:
                root = Path(book.root)
                current = path_inside(root=root, relative=STATE_PATH)
                if current.is_file():
                    # the backup is written through the helper too: a planted symlink at the .bak name is refused
                    backup = STATE_PATH.with_name(f"{STATE_PATH.name}.bak-{timezone.now():%Y%m%d-%H%M%S}")
                    book_file_write(root=root, relative=backup, text=current.read_bytes())
                book_file_write(root=root, relative=STATE_PATH, text=text)
        except OSError as exc:
            raise CommandError(f"无法写入 {target}：{exc.strerror or exc}") from exc
        self.emit({"written": str(target), "bytes": len(text.encode("utf-8"))}, None, options, indent=None)
