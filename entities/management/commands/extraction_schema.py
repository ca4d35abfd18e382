"""``python manage.py extraction_schema [--write]`` — print (or write to docs/) the extraction JSON Schema."""

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from entities.extraction_schema import extraction_json_schema

SCHEMA_FILE = Path(settings.BASE_DIR) / "docs" / "extraction.schema.json"


def schema_text() -> str:
    """The file's content: the schema, indented, with a final newline."""
    return json.dumps(extraction_json_schema(), ensure_ascii=False, indent=2) + "\n"


class Command(BaseCommand):
    help = "打印抽取结果（Data Agent 提交的 JSON）的 JSON Schema；--write 写入 docs/extraction.schema.json。"
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--write", action="store_true", help=f"写入 {SCHEMA_FILE}（而不是打印）")

    def handle(self, *args, **options):
        if options["write"]:
            SCHEMA_FILE.write_text(schema_text(), encoding="utf-8")
            self.stdout.write(f"已写入 {SCHEMA_FILE}")
        else:
            self.stdout.write(schema_text(), ending="")
