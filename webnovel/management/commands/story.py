"""``python manage.py story <interface> <book> [args]`` — every read interface on the command line."""

import argparse
import json
import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.lazybuild import book_get_or_build
from kernel.exceptions import DomainError
from kernel.interfaces import interfaces_load


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "y", "是"}:
        return True
    if lowered in {"0", "false", "no", "n", "否"}:
        return False
    raise argparse.ArgumentTypeError(f"不是布尔值：{value}")


def render_json(data: object) -> str:
    """The one JSON rendering used by the CLI (sorted keys off: selectors define the order)."""
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)


INT64 = 2**63


def _bounds_check(arg, value: object) -> None:
    # Past 64 bits an integer would reach the database as an OverflowError: stop it at the door, as REST
    # does with a 422 from its exception handler. Every other bound is the selector's, with its own
    # message, the same through every door.
    if arg.type is int and isinstance(value, int) and not -INT64 <= value < INT64:
        label = (arg.help or arg.name).split("（")[0]
        if arg.minimum is not None and arg.maximum is not None:
            raise CommandError(f"{label}必须是 {arg.minimum}…{arg.maximum:,} 的整数：{value}")
        raise CommandError(f"{label}超出范围（整数最大 {INT64 - 1}）：{value}")


class Command(BaseCommand):
    help = "查询一本书：story <接口名> <书籍slug> [参数]。`story list` 列出全部接口。"
    # Called by agents before and after every chapter: skip the system checks (they import the whole URL
    # conf and API, a third of the command's start); `manage.py check`, migrate and the server run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        # One subparser, for the read asked (built in ``handle``): building all seventy cost an agent's
        # every call ~40 ms of argparse and gettext, a tenth of the process.
        names = ["list", *sorted(interfaces_load())]
        parser.add_argument("interface", metavar="<interface>", choices=names, help="接口名（story list 列出全部接口）")
        parser.add_argument("args", nargs=argparse.REMAINDER, metavar="<book> …", help="书籍 slug 与该接口的参数")

    def read_parser(self, *, name: str, spec) -> CommandParser:
        """The parser of one read: the book slug, then its declared args."""
        sub = CommandParser(
            prog=f"{self._prog} {name}",
            description=spec.help,
            called_from_command_line=getattr(self, "_called_from_command_line", None),
        )
        sub.add_argument("book", help="书籍 slug")
        for arg in spec.all_args():
            kind = _bool if arg.type is bool else arg.type
            kwargs = {"type": kind, "help": arg.help or arg.name}
            if arg.choices:
                kwargs["choices"] = arg.choices
            if arg.many:
                kwargs["nargs"] = "+" if arg.required else "*"
            if arg.positional:
                if not arg.required:
                    kwargs["nargs"] = "?"
                    kwargs["default"] = arg.default
                sub.add_argument(arg.name, **kwargs)
            else:
                flag = "--" + arg.name.replace("_", "-")
                sub.add_argument(flag, dest=arg.name, required=arg.required, default=arg.default, **kwargs)
        return sub

    def create_parser(self, prog_name, subcommand, **kwargs):
        self._prog = f"{prog_name} {subcommand}"
        return super().create_parser(prog_name, subcommand, **kwargs)

    def handle(self, *args, **options):
        registry = interfaces_load()
        name = options["interface"]
        if name == "list":
            for iname, spec in sorted(registry.items()):
                self.stdout.write(f"{iname}\t{spec.help}")
            return
        spec = registry[name]
        parsed = vars(self.read_parser(name=name, spec=spec).parse_args(list(args)))
        params = {arg.name: parsed.get(arg.name) for arg in spec.all_args()}
        for arg in spec.all_args():
            _bounds_check(arg, params[arg.name])
        try:
            book = book_get_or_build(slug=parsed["book"], paths=True)
            result = spec.call(book=book, args=params)
        except DomainError as exc:
            sys.stderr.write(render_json(exc.as_dict()) + "\n")
            raise CommandError(exc.message, returncode=exc.status_code // 100) from exc
        if isinstance(result, str) and (spec.text or params.get("format", "json") != "json"):
            self.stdout.write(result)
        else:
            self.stdout.write(render_json(result))
