"""``python manage.py write <tool> <book> --json '{…}'`` — every write tool on the command line.

The CLI door of the writes, generated from the same declarations as the MCP write tools
(``agents/writes.py``: the journaled writes that declare a ``WriteDoor`` in their app, plus finalize,
sync, the extraction and the continuity check): the arguments are the tool's arguments as one JSON
object, validated by the same schema, run by the same service, and the answer is the tool's answer.
A new declared write gets this door without touching this file."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from agents.writes import write_tools
from core.lazybuild import book_get_or_build
from kernel.exceptions import DomainError
from kernel.jsonsafe import json_loads_strict


def _render(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)


class Command(BaseCommand):
    help = (
        "写入一本书：write <工具名> <书籍slug> --json '{…}'（参数与同名 MCP 工具相同；--json - 从标准输入读）。"
        "`write list` 列出全部写入工具。"
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("tool", metavar="<tool>", help="写入工具名（write list 列出全部）")
        parser.add_argument("book", nargs="?", metavar="<book>", help="书籍 slug")
        parser.add_argument(
            "--json", dest="body", default="{}", help="参数：一个 JSON 对象（与 MCP 工具的参数相同）；- 从标准输入读"
        )

    def handle(self, *args, **options):
        tools = write_tools()
        name = options["tool"]
        if name == "list":
            for tname, tool in tools.items():
                self.stdout.write(f"{tname}\t{tool.description.split('：')[0]}")
            return
        if name not in tools:
            raise CommandError(f"没有写入工具「{name}」（可用：{'、'.join(tools)}；write list 列出全部）")
        if not options["book"]:
            raise CommandError(f"缺少书籍 slug：write {name} <书籍slug> --json '{{…}}'")
        raw = sys.stdin.read() if options["body"] == "-" else options["body"]
        try:
            arguments = json_loads_strict(raw, root="arguments")
            if not isinstance(arguments, dict):
                raise CommandError(f"--json 必须是一个 JSON 对象（收到 {type(arguments).__name__}）")
            book = book_get_or_build(slug=options["book"], paths=True)
            result = tools[name].run(book, arguments)
        except DomainError as exc:
            sys.stderr.write(_render(exc.as_dict()) + "\n")
            raise CommandError(exc.message, returncode=exc.status_code // 100) from exc
        self.stdout.write(_render(result))
