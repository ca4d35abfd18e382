"""``python manage.py mcp --book <slug|folder>`` — the MCP server over stdio, for desktop agent hosts."""

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand

from agents.books import BookSource
from agents.server import Access, server_build
from agents.stdio import stdio_serve

READ_ONLY_REFUSAL = "本 MCP 服务（stdio）以 --read-only 启动，只提供查询工具；要写入请去掉 --read-only 重新启动"


async def _serve(access: Access) -> None:
    # our transport, not the SDK's stdio_server: it answers every line, a malformed one too (agents/stdio.py)
    await stdio_serve(server_build(default_access=access), max_bytes=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


class Command(BaseCommand):
    help = (
        "以 stdio 运行 MCP 服务（Claude Code、Codex 等桌面宿主）：一本书的全部查询工具与写入工具。"
        "--book 给书籍 slug，或书籍文件夹（首次调用工具时先重建 / 同步）。"
    )
    # A host starts this once per session and waits for its handshake: skip the system checks.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--book",
            required=True,
            help="书籍 slug，或含 book.yaml 的书籍文件夹（也可写 WEBNOVEL_BOOKS_DIR 下的文件夹名）",
        )
        parser.add_argument("--read-only", action="store_true", help="只提供查询工具（不列出、也不接受写入工具）")

    def handle(self, *args, **options):
        # stdout is the protocol's wire: the SDK diverts fd 1 to stderr while it serves, and nothing
        # here prints; errors go back as tool errors, logs to stderr.
        access = Access(book=BookSource(options["book"]), write=not options["read_only"], refusal=READ_ONLY_REFUSAL)
        anyio.run(_serve, access)
