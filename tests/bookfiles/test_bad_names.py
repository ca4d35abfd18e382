"""A book file whose name is not UTF-8 (issue 25): a GBK-encoded 第0025章.md has no 第 in its bytes and was
skipped unseen by rebuild and sync. It is reported as ``bad_name``, the bytes shown as ``\\xNN``."""

import os
import shutil
from pathlib import Path

import pytest
from django.test import override_settings

from bookfiles.rebuilder import book_rebuild, book_sync
from core.models import Book, Chapter
from tests.conftest import DEMO_BOOK_SOURCE

pytestmark = [pytest.mark.django_db]

GBK_CHAPTER = "第0025章.md".encode("gbk")  # b"\xb5\xda0025\xd5\xc2.md"
SHOWN = "定稿/正文/第2卷/\\xb5\\xda0025\\xd5\\xc2.md"


@pytest.fixture(autouse=True)
def no_hooks():
    with override_settings(WEBNOVEL_AFTER_CHAPTER_HOOKS=[]):
        yield


@pytest.fixture
def folder(tmp_path) -> Path:
    if not (DEMO_BOOK_SOURCE / "book.yaml").is_file():
        pytest.skip("the demo book is absent")
    return Path(shutil.copytree(DEMO_BOOK_SOURCE, tmp_path / "demo-book", ignore=shutil.ignore_patterns(".journal")))


def _put(folder: Path, relative_bytes: bytes) -> None:
    with open(os.fsencode(str(folder)) + b"/" + relative_bytes, "wb") as fh:
        fh.write("---\ntitle: 第二十五章\n---\n林风醒来。\n".encode())


def test_a_gbk_named_chapter_stops_the_rebuild_naming_its_bytes(folder):
    _put(folder, "定稿/正文/第2卷/".encode() + GBK_CHAPTER)
    report = book_rebuild(root=folder)
    assert not report["ok"]
    (error,) = report["errors"]
    assert (error["code"], error["file"]) == ("bad_name", SHOWN)
    assert "不是 UTF-8 编码（文件名按 GBK 解码为 第0025章.md）" in error["message"]
    assert not Book.objects.filter(slug="demo-book").exists()


def test_sync_reports_a_gbk_named_chapter(folder):
    assert book_rebuild(root=folder)["ok"]
    _put(folder, "定稿/正文/第2卷/".encode() + GBK_CHAPTER)
    report = book_sync(book=Book.objects.get(slug="demo-book"))
    assert [(u["code"], u["file"]) for u in report["unreadable"]] == [("bad_name", SHOWN)]
    assert "按 GBK 解码为 第0025章.md" in report["unreadable"][0]["message"]
    assert Chapter.objects.filter(book__slug="demo-book").count() == 24


def test_a_gbk_named_markdown_file_outside_the_book_s_folders_is_a_warning(folder):
    (folder / "草稿").mkdir()
    _put(folder, "草稿/".encode() + "灵感.md".encode("gbk"))
    report = book_rebuild(root=folder)
    assert report["ok"], report["errors"]
    (warning,) = [w for w in report["warnings"] if w["code"] == "bad_name"]
    assert warning["file"] == "草稿/\\xc1\\xe9\\xb8\\xd0.md"
    assert "已跳过" in warning["message"] and "灵感.md" in warning["message"]
