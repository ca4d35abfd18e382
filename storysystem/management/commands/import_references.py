"""``python manage.py import_references <dir>`` — import a folder of reference CSVs."""

import json

from django.core.management.base import BaseCommand, CommandError

from kernel.exceptions import DomainError
from storysystem.services import references_import


class Command(BaseCommand):
    help = "导入一个目录下的参考资料 CSV（UTF-8，有无 BOM 均可），按编号幂等：新建/更新/不变分别计数。"

    def add_arguments(self, parser):
        parser.add_argument("directory", help="CSV 所在目录（不递归）")
        parser.add_argument("--library", help="资料库名称（默认取目录名；seed 为内置入门库）")
        parser.add_argument("--dry-run", action="store_true", help="只校验并报告，不写数据库")
        parser.add_argument("--json", action="store_true", help="以 JSON 输出报告")

    def handle(self, *args, **options):
        try:
            report = references_import(
                directory=options["directory"], library=options["library"], dry_run=options["dry_run"]
            )
        except DomainError as exc:
            details = exc.extra.get("errors") if isinstance(exc.extra, dict) else None
            if details:
                for line in details:
                    self.stderr.write(line)
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report, ensure_ascii=False, indent=2))
            return
        for name, counts in report["tables"].items():
            self.stdout.write(
                f"{name}: {counts['rows']} 行，新建 {counts['created']}，更新 {counts['updated']}，"
                f"不变 {counts['unchanged']}，文件中已无 {counts['not_in_file']}"
            )
        prefix = "（试运行，未写入）" if report["dry_run"] else ""
        self.stdout.write(
            f"{prefix}资料库 {report['library']}：新建 {report['created']}，更新 {report['updated']}，不变 {report['unchanged']}"
        )
