"""``python manage.py export_references <dir>`` — write a library back to CSV files."""

from core.commands import BookCommand
from storysystem.services import references_export


class Command(BookCommand):
    help = "把一个资料库导出为 CSV 目录（表头顺序、BOM 与换行符与导入时一致，可再次导入）。"
    book_argument = None  # a reference library belongs to no book
    json_help = "以 JSON 输出写入的文件列表（默认每行一个路径）"

    def add_command_arguments(self, parser):
        parser.add_argument("directory", help="输出目录（不存在则创建；同名文件会被覆盖）")
        parser.add_argument("--library", default="seed", help="资料库名称（默认 seed）")

    def handle(self, *args, **options):
        paths = [str(path) for path in references_export(directory=options["directory"], library=options["library"])]
        if paths or options["json"]:
            self.emit(paths, "\n".join(paths), options)
