"""A busy database (issue 19, item 10): while another connection holds the write lock (a long rebuild),
a keyed read answers at once — authentication and the context pack's hit log record nothing they would
have to wait for — and a write that cannot get the lock is a 503 with ``Retry-After`` and a Chinese
message, never a 500; the dashboard likewise. Real locks, held by a second connection to the same
database file (SQLite) or server (PostgreSQL), on both engines."""

import json
import sqlite3
from contextlib import contextmanager

import pytest
from django.db import connection
from django.test import Client

from bookfiles.rebuilder import book_rebuild
from core.models import ApiKey, Book
from core.services import apikey_create
from kernel.exceptions import DATABASE_BUSY_MESSAGE
from memory.models import Fact, MemoryHit
from tests.conftest import DEMO_BOOK

pytestmark = pytest.mark.django_db(transaction=True)

FACT = {"category": "world_rules", "subject": "灵气", "field": "浓度", "value": "稀薄", "chapter": 1}


@pytest.fixture
def demo():
    if not DEMO_BOOK.is_dir():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    assert book_rebuild(root=DEMO_BOOK)["ok"] is True
    return Book.objects.get(slug="demo-book")


def _pg_conninfo() -> dict:
    s = connection.settings_dict
    info = {"host": s["HOST"], "port": s["PORT"], "user": s["USER"], "password": s["PASSWORD"], "dbname": s["NAME"]}
    return {k: v for k, v in info.items() if v}


@contextmanager
def writer_holding(*tables: str):
    """Another connection in a write transaction that holds the lock until the block ends. SQLite: the
    database's one writer lock (readers pass: WAL). PostgreSQL: ``tables`` locked in EXCLUSIVE mode
    (writes wait, reads pass)."""
    if connection.vendor == "sqlite":
        other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, timeout=0)
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE webnovel_book SET title = title")
        try:
            yield
        finally:
            other.execute("ROLLBACK")
            other.close()
    else:
        import psycopg

        with psycopg.connect(**_pg_conninfo()) as other:
            other.execute(f"LOCK TABLE {', '.join(tables)} IN EXCLUSIVE MODE")
            try:
                yield
            finally:
                other.rollback()


@contextmanager
def database_locked_for_reads(table: str):
    """Even reads wait: SQLite — another connection in EXCLUSIVE locking mode (this connection is
    closed first and reopens with a 300 ms timeout); PostgreSQL — ``table`` in ACCESS EXCLUSIVE mode
    (what a migration or a TRUNCATE takes) and a 300 ms lock_timeout."""
    if connection.vendor == "sqlite":
        connection.close()
        options = connection.settings_dict["OPTIONS"]
        timeout = options.get("timeout")
        other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, timeout=5)
        other.execute("PRAGMA locking_mode = EXCLUSIVE")
        other.execute("BEGIN EXCLUSIVE")
        options["timeout"] = 0.3
        try:
            yield
        finally:
            other.execute("ROLLBACK")
            other.close()
            options["timeout"] = timeout
            connection.close()
    else:
        import psycopg

        with psycopg.connect(**_pg_conninfo()) as other, short_lock_wait():
            other.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            try:
                yield
            finally:
                other.rollback()


@contextmanager
def short_lock_wait():
    """This connection's wait for a lock, 30 s by default, cut to 300 ms so the test does not sit out
    the whole timeout (the behaviour at the end of the wait is the same)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA busy_timeout")
            (previous,) = cursor.fetchone()
            cursor.execute("PRAGMA busy_timeout = 300")
        else:
            cursor.execute("SET lock_timeout = '300ms'")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute(f"PRAGMA busy_timeout = {int(previous)}")
            else:
                cursor.execute("RESET lock_timeout")


def _busy_timeout() -> int:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout" if connection.vendor == "sqlite" else "SHOW lock_timeout")
        return cursor.fetchone()[0]


def test_a_keyed_read_does_not_wait_for_the_writer(demo):
    key, raw = apikey_create(name="reader", scope="read", book=None)
    assert key.last_used_at is None  # the first use would stamp it: the write that queued reads
    client = Client(HTTP_X_API_KEY=raw)
    timeout_before = _busy_timeout()
    with writer_holding("webnovel_apikey", "memory_memoryhit"):
        response = client.get("/api/books/demo-book/chapters/1")
        assert response.status_code == 200
        assert response.json()["title"]
        pack = client.get("/api/books/demo-book/chapters/2/context")
        assert pack.status_code == 200
        assert pack.json()["chapter"] == 2
        # what the read would have written was skipped, not waited for
        assert ApiKey.objects.get(pk=key.pk).last_used_at is None
        assert not MemoryHit.objects.filter(book=demo, chapter=2).exists()
    assert _busy_timeout() == timeout_before  # the connection's own timeout is back
    assert client.get("/api/books/demo-book/chapters/2/context").status_code == 200
    assert ApiKey.objects.get(pk=key.pk).last_used_at is not None  # once free, recorded as before
    assert not MemoryHit.objects.filter(book=demo, chapter=2).exists()  # a read never writes the hit log


def test_a_write_that_cannot_get_the_lock_is_a_503_and_writes_nothing(demo):
    _, raw = apikey_create(name="writer", scope="write", book=None)
    client = Client(HTTP_X_API_KEY=raw)
    body = json.dumps(FACT)
    with writer_holding("memory_fact", "memory_factevent"), short_lock_wait():
        response = client.post("/api/books/demo-book/memory/facts", data=body, content_type="application/json")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json() == {"message": DATABASE_BUSY_MESSAGE, "extra": {"retry_after": 5}}
    assert not Fact.objects.filter(book=demo, subject="灵气").exists()
    # the connection is usable again: the retry the answer asks for succeeds
    retry = client.post("/api/books/demo-book/memory/facts", data=body, content_type="application/json")
    assert retry.status_code == 201
    assert Fact.objects.get(book=demo, subject="灵气").value == "稀薄"


def test_the_dashboard_answers_a_busy_database_with_a_503_page(demo):
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw-long-enough-123"))
    assert client.get("/dashboard/demo-book/threads/").status_code == 200
    with database_locked_for_reads("threads_thread"):
        page = client.get("/dashboard/demo-book/threads/")
    assert page.status_code == 503
    assert page["Retry-After"] == "5"
    assert DATABASE_BUSY_MESSAGE in page.content.decode()
    assert client.get("/dashboard/demo-book/threads/").status_code == 200
