"""Fixtures of the agent front door: the demo book committed to the test database (so a server in
another process or thread sees it), MCP clients over the real transports, and API keys."""

import os
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from anyio.from_thread import start_blocking_portal
from django.db import connection

from tests.conftest import DEMO_BOOK, REPO


@pytest.fixture
def demo(transactional_db):
    """The demo book, committed (the tests that use it are transactional): a server in another process
    or thread sees it, and what that server writes is visible here. Flushed after the test."""
    if not (DEMO_BOOK / "book.yaml").exists():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book

    assert book_rebuild(root=DEMO_BOOK)["ok"]
    return Book.objects.get(slug="demo-book")


def server_env() -> dict[str, str]:
    """The environment of a server process: this test run's database (the SQLite file, or the PostgreSQL
    test database the run created)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webnovel.settings"}
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        env.pop("DATABASE_URL", None)
        env["SQLITE_PATH"] = str(db["NAME"])
    else:
        auth = quote(db["USER"] or "", safe="") + (":" + quote(db["PASSWORD"], safe="") if db["PASSWORD"] else "")
        env["DATABASE_URL"] = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    return env


class McpSession:
    """A connected SDK client, driven synchronously from a test through an anyio portal."""

    def __init__(self, portal, client) -> None:
        self.portal, self.client = portal, client

    def tools(self) -> dict:
        return {t.name: t for t in self.portal.call(self.client.list_tools).tools}

    def call(self, name: str, arguments: dict | None = None):
        return self.portal.call(self.client.call_tool, name, arguments or {})


def stdio_session(book: str, *extra: str):
    """A context manager: ``manage.py mcp --book <book>`` as a subprocess, with the SDK's stdio client."""
    from contextlib import contextmanager

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    @contextmanager
    def session():
        params = StdioServerParameters(
            command=sys.executable,
            args=[str(Path(REPO) / "manage.py"), "mcp", "--book", book, *extra],
            cwd=str(REPO),
            env=server_env(),
        )
        with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(params)) as client:
            yield McpSession(portal, client)

    return session()


@pytest.fixture(scope="module")
def stdio(django_db_setup):
    with stdio_session("demo-book") as session:
        yield session
