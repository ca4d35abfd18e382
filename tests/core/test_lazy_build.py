"""The lazy build (core/lazybuild.py): on an empty database, the first query for a book whose folder is in
WEBNOVEL_BOOKS_DIR builds it — the ``story`` CLI and REST here, MCP over HTTP in tests/agents/test_http.py,
stdio in tests/agents/test_stdio.py — through the rebuilder the book-files app registers, with the
safety rules of ``rebuild``."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, override_settings

from bookfiles.rebuilder import book_rebuild
from core import lazybuild
from core.models import Book, Chapter
from core.services import apikey_create
from kernel.interfaces import target_resolve
from tests.conftest import DEMO_BOOK
from tests.factories import book_folder_make

pytestmark = pytest.mark.django_db


def test_the_book_files_app_registers_the_rebuilder_and_no_setting_names_it(settings):
    # its own dotted path, resolved on the first lazy build (not imported by every django.setup())
    assert lazybuild._rebuilder == "bookfiles.rebuilder.book_rebuild"
    assert target_resolve(lazybuild._rebuilder) is book_rebuild
    assert not hasattr(settings, "WEBNOVEL_BOOK_REBUILDER")


@override_settings(WEBNOVEL_BOOKS_DIR=DEMO_BOOK.parent)
def test_story_on_an_empty_database_builds_the_book_and_answers(capsys):
    assert not Book.objects.exists()
    call_command("story", "thread-overdue", "demo-book")
    overdue = json.loads(capsys.readouterr().out)
    assert Chapter.objects.filter(book__slug="demo-book").count() == 24
    assert overdue["current_chapter"] == 24
    assert [t["id"] for t in overdue["threads"]] == ["悬念-001"]
    call_command("story", "report-stats", "demo-book")  # the second query finds the book: built once
    assert json.loads(capsys.readouterr().out)["chapters"] == 24
    assert Book.objects.count() == 1


@override_settings(WEBNOVEL_BOOKS_DIR=DEMO_BOOK.parent)
def test_rest_on_an_empty_database_builds_the_book_and_answers():
    raw = apikey_create(name="all", scope="read")[1]
    resp = Client(HTTP_X_API_KEY=raw).get("/api/books/demo-book/reports/stats")
    assert (resp.status_code, resp.json()["chapters"]) == (200, 24)
    assert Book.objects.get().root == str(DEMO_BOOK.resolve())


def test_rest_never_builds_from_a_path_or_an_unknown_folder(tmp_path):
    book_folder_make(tmp_path / "mini")
    raw = apikey_create(name="all", scope="read")[1]
    with override_settings(WEBNOVEL_BOOKS_DIR=tmp_path / "books"):
        # "x" * 5000: a name no file system holds (the fuzzer's; it was a 500, File name too long)
        for slug in ("nobook", "..%2Fmini", "%2E%2E", "x" * 5000):
            resp = Client(HTTP_X_API_KEY=raw).get(f"/api/books/{slug}/reports/stats")
            assert resp.status_code == 404, slug
    assert not Book.objects.exists()


def test_a_broken_folder_is_a_chinese_error_and_writes_nothing(tmp_path, capsys):
    book_folder_make(tmp_path / "broken", {"book.yaml": "slug: broken\nvolumes: [oops\n"})
    raw = apikey_create(name="all", scope="read")[1]
    with override_settings(WEBNOVEL_BOOKS_DIR=tmp_path):
        resp = Client(HTTP_X_API_KEY=raw).get("/api/books/broken/reports/stats")
        assert resp.status_code == 422
        assert resp.json()["message"].startswith(
            f"{(tmp_path / 'broken').resolve()} 的书籍不在数据库中，从文件夹重建失败："
        )
        with pytest.raises(CommandError) as err:
            call_command("story", "report-stats", "broken")
    assert err.value.returncode == 4
    assert not Book.objects.exists()


def test_the_rebuild_guard_holds_a_folder_whose_slug_has_another_folder(tmp_path):
    # The same slug built from another folder: the lazy build refuses as `rebuild` does (would_delete).
    book_folder_make(tmp_path / "a" / "qinglan")
    book_folder_make(tmp_path / "b" / "qinglan")
    assert book_rebuild(root=tmp_path / "a" / "qinglan")["ok"]
    with override_settings(WEBNOVEL_BOOKS_DIR=tmp_path / "b"):
        with pytest.raises(Exception) as err:
            lazybuild.book_build(root=(tmp_path / "b" / "qinglan").resolve())
    assert "拒绝重建" in err.value.message
    assert Book.objects.get().root == str((tmp_path / "a" / "qinglan").resolve())
