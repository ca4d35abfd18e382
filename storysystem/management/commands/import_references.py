"""``python manage.py import_references <dir>`` — import a folder of reference CSVs."""

from core.commands import BookCommand
from storysystem.services import references_import


class Command(BookCommand):
    help = "导入一个目录下的参考资料 CSV（UTF-8，有无 BOM 均可），按编号幂等：新建/更新/不变分别计数。"
    book_argument = None  # a reference library belongs to no book
    json_help = "以 JSON 输出报告"

    def add_command_arguments(self, parser):
        parser.add_argument("directory", help="CSV 所在目录（不递归）")
        parser.add_argument("--library", help="资料库名称（默认取目录名；seed 为内置入门库）")
        parser.add_argument("--dry-run", action="store_true", help="只校验并报告，不写数据库")

    def handle(self, *args, **options):
        report = references_import(
            directory=options["directory"], library=options["library"], dry_run=options["dry_run"]
        )
        if options["json"]:
            self.emit(report, None, options)
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
