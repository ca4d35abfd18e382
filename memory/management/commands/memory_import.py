"""``python manage.py memory_import <book> <file>`` — import the plugin's memory_scratchpad.json."""

import json
from pathlib import Path

from django.core.management.base import CommandError

from core.commands import BookCommand
from memory.services import scratchpad_import


def _constant_refuse(name: str) -> None:
    raise ValueError(f"不支持 {name}（JSON 中没有 NaN / Infinity）")


class Command(BookCommand):
    help = (
        "导入 .webnovel/memory_scratchpad.json（本系统导出的，或旧插件的，如 character_state 桶）：能对应的写为事实"
        "（同 id 更新，不重复），对应不上的桶与条目原样保留并在报告中列出。"
    )

    json_default = True

    def add_command_arguments(self, parser):
        parser.add_argument("file", type=Path, help="memory_scratchpad.json 的路径")
        parser.add_argument("--replace", action="store_true", help="先删除以前导入的事实")

    def handle(self, *args, **options):
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"文件不存在：{path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"), parse_constant=_constant_refuse)
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path} 不是有效的 JSON：第 {exc.lineno} 行第 {exc.colno} 列：{exc.msg}") from exc
        except UnicodeDecodeError as exc:
            raise CommandError(f"{path} 不是 UTF-8 文本：第 {exc.start} 字节") from exc
        except (ValueError, RecursionError) as exc:  # NaN / Infinity, a 5,000-digit integer, deep nesting
            raise CommandError(f"{path} 不是有效的 JSON：{exc}") from exc
        except OSError as exc:
            raise CommandError(f"无法读取 {path}：{exc.strerror or exc}") from exc
        result = scratchpad_import(book=self.book_get(options), data=data, replace=options["replace"])
        self.emit(result, None, options, indent=None)
