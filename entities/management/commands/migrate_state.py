"""``python manage.py migrate_state <project_root> [--commit]`` — import an old .webnovel/state.json."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from entities.migration import state_migrate
from webnovel.exceptions import DomainError


class Command(BaseCommand):
    help = (
        "把旧项目的 .webnovel/state.json（v5.0–v6）导入数据库。默认只演练并输出摘要；"
        "--commit 才写入，并先把 state.json 备份为 state.json.bak-<时间戳>，再改写为精简版（< 5 KB）。"
    )

    def add_arguments(self, parser):
        parser.add_argument("project_root", help="旧项目根目录（含 .webnovel/state.json）")
        parser.add_argument("--commit", action="store_true", help="真正写入（默认演练，不改任何东西）")
        parser.add_argument("--book", help="导入到这本书（slug）；默认按根目录匹配，没有则新建")

    def handle(self, *args, **options):
        try:
            summary = state_migrate(
                root=Path(options["project_root"]), commit=options["commit"], book_slug=options["book"]
            )
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(json.dumps(summary, ensure_ascii=False, indent=2))
