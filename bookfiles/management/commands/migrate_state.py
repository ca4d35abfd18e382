"""``python manage.py migrate_state <project_root> [--commit]`` — import an old .webnovel/state.json."""

from pathlib import Path

from bookfiles.importers.state_project import state_migrate
from core.commands import BookCommand


class Command(BookCommand):
    help = (
        "把旧项目的 .webnovel/state.json（v5.0–v6）导入数据库。默认只演练并输出摘要（JSON）；"
        "--commit 才写入，并先把 state.json 备份为 state.json.bak-<时间戳>，再改写为精简版（< 5 KB）；"
        "旧的 正文/第N章-标题.md 与 .webnovel/summaries/ 转为 定稿/正文/第NNNN章.md（不覆盖已有文件）。"
    )
    book_argument = None  # the old project's root comes first; the book is --book, or found / made from the root
    json_default = True

    def add_command_arguments(self, parser):
        parser.add_argument("project_root", help="旧项目根目录（含 .webnovel/state.json）")
        parser.add_argument("--commit", action="store_true", help="真正写入（默认演练，不改任何东西）")
        parser.add_argument("--book", help="导入到这本书（slug）；默认按根目录匹配，没有则新建")
        # the old plugin's docs told users to pass --backup: accepted, since a backup is always made
        parser.add_argument(
            "--backup", action="store_true", help="兼容旧插件的参数：--commit 时总会先备份 state.json，无需指定"
        )

    def handle(self, *args, **options):
        summary = state_migrate(root=Path(options["project_root"]), commit=options["commit"], book_slug=options["book"])
        self.emit(summary, None, options)
