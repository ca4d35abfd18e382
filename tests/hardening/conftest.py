"""Fixtures for the hardening tests: a file database that child processes (gunicorn, a rebuild to
be killed) can open, on the same engine as the test run (SQLite file, or a fresh PostgreSQL
database next to the test database when ``DATABASE_URL`` points at PostgreSQL)."""

import os
import shutil
import uuid
import warnings
from pathlib import Path

import pytest

from tests.conftest import DEMO_BOOK


def _pg_admin(url: str):
    import dj_database_url
    import psycopg

    cfg = dj_database_url.parse(url)
    conninfo = dict(
        host=cfg.get("HOST") or None,
        port=cfg.get("PORT") or None,
        user=cfg.get("USER") or None,
        password=cfg.get("PASSWORD") or None,
        dbname="postgres",
    )
    return psycopg.connect(autocommit=True, **{k: v for k, v in conninfo.items() if v})


def _pg_drop(url: str, name: str) -> None:
    """Drop a scratch database; never hang a test run on it (a DROP waits for every backend of the
    server to absorb a barrier, so one stuck session elsewhere would block it)."""
    with _pg_admin(url) as conn:
        conn.execute("SET statement_timeout = '30s'")
        try:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except Exception as exc:  # noqa: BLE001 - a leftover scratch database is not a test failure
            warnings.warn(f"could not drop scratch database {name}: {exc}", stacklevel=1)


def _pg(url: str) -> bool:
    return url.startswith(("postgres://", "postgresql://"))


@pytest.fixture(scope="session")
def _migrated_template(tmp_path_factory):
    """One migrated database per session, copied for each test (migrating costs seconds)."""
    from bench.bench_faults import child_run

    url = os.environ.get("DATABASE_URL", "")
    if _pg(url):
        name = f"wn_hardening_tpl_{uuid.uuid4().hex[:10]}"
        with _pg_admin(url) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        template = f"{url.rsplit('/', 1)[0]}/{name}"
        child_run("migrate", db_url=template)
        yield name
        _pg_drop(url, name)
    else:
        path = tmp_path_factory.mktemp("template") / "template.sqlite3"
        child_run("migrate", db_url=f"sqlite:///{path}")
        yield path


@pytest.fixture
def child_db(tmp_path, _migrated_template) -> str:
    """A migrated DATABASE_URL that child processes (gunicorn, a rebuild to be killed) can open."""
    url = os.environ.get("DATABASE_URL", "")
    if _pg(url):
        name = f"wn_hardening_{uuid.uuid4().hex[:10]}"
        with _pg_admin(url) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{_migrated_template}"')
        yield f"{url.rsplit('/', 1)[0]}/{name}"
        _pg_drop(url, name)
    else:
        path = tmp_path / "child.sqlite3"
        shutil.copyfile(_migrated_template, path)
        yield f"sqlite:///{path}"


@pytest.fixture
def demo_copy(tmp_path) -> Path:
    """A writable copy of the demo book (folder name demo-book, slug demo-book)."""
    if not DEMO_BOOK.is_dir():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    dest = tmp_path / "books" / "demo-book"
    shutil.copytree(DEMO_BOOK, dest)
    return dest


@pytest.fixture
def books(db, tmp_path):
    """The demo book and a one-chapter second book 'other' (for cross-book keys and scopes)."""
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book  # app modules load after Django is set up

    if not DEMO_BOOK.is_dir():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    assert book_rebuild(root=DEMO_BOOK)["ok"] is True
    other = tmp_path / "other"
    (other / "定稿" / "正文").mkdir(parents=True)
    (other / "book.yaml").write_text("slug: other\ntitle: 另一本书\n", encoding="utf-8")
    (other / "定稿" / "正文" / "第0001章.md").write_text("---\ntitle: 开端\n---\n另一本书的正文。\n", encoding="utf-8")
    assert book_rebuild(root=other)["ok"] is True
    return Book.objects.get(slug="demo-book"), Book.objects.get(slug="other")
