"""``python manage.py export_references <dir>`` — write a library back to CSV files."""

from django.core.management.base import BaseCommand, CommandError

from kernel.exceptions import DomainError
from storysystem.services import references_export


class Command(BaseCommand):
    help = "把一个资料库导出为 CSV 目录（表头顺序、BOM 与换行符与导入时一致，可再次导入）。"

    def add_arguments(self, parser):
        parser.add_argument("directory", help="输出目录（不存在则创建；同名文件会被覆盖）")
        parser.add_argument("--library", default="seed", help="资料库名称（默认 seed）")

    def handle(self, *args, **options):
        try:
            paths = references_export(directory=options["directory"], library=options["library"])
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        for path in paths:
            self.stdout.write(str(path))
