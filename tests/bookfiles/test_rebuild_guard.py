"""A rebuild or sync never wipes a book by mistake (issue 19 item 2): an empty or wrong folder, another
folder claiming the slug, a folder that lost most of its chapters, a character card moved out and back."""

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from bookfiles.rebuilder import book_dump, book_rebuild, book_sync
from core.models import Book, Chapter
from entities.models import Entity, Relationship, StateChange
from entities.services.ingest import extraction_ingest
from tests.conftest import DEMO_BOOK

EXTRACTION = Path(__file__).resolve().parents[2] / "examples" / "demo-extractions" / "第0008章.json"


@pytest.fixture
def demo(db, tmp_path) -> Path:
    root = Path(shutil.copytree(DEMO_BOOK, tmp_path / "books" / "demo-book"))
    assert book_rebuild(root=root)["ok"] is True
    book = Book.objects.get(slug="demo-book")
    extraction_ingest(book=book, number=8, payload=json.loads(EXTRACTION.read_text(encoding="utf-8")))
    return root


def _snapshot() -> str:
    return json.dumps(book_dump(book=Book.objects.get(slug="demo-book")), ensure_ascii=False, sort_keys=True)


def test_an_empty_folder_named_like_a_book_is_not_a_book(demo, tmp_path):
    before = _snapshot()
    empty = tmp_path / "elsewhere" / "demo-book"
    empty.mkdir(parents=True)
    report = book_rebuild(root=empty)
    assert report["ok"] is False
    assert [(e["code"], e["file"]) for e in report["errors"]] == [("not_a_book", ".")]
    assert "既没有 book.yaml，也没有 定稿/正文/ 下的章节" in report["errors"][0]["message"]
    assert _snapshot() == before


def test_another_folder_claiming_the_slug_is_refused_with_what_it_would_delete(demo, tmp_path):
    before = _snapshot()
    other = tmp_path / "other"
    other.mkdir()
    (other / "book.yaml").write_text("slug: demo-book\ntitle: 冒名\n", encoding="utf-8")
    report = book_rebuild(root=other)
    assert report["ok"] is False
    [error] = report["errors"]
    assert error["code"] == "would_delete" and error["level"] == "error"
    message = error["message"]
    assert f"《青岚剑录》记录的文件夹是 {demo}，本次重建的是 {other}" in message
    assert "将删除 24/24 章，超过一半" in message
    assert "章节 24（第1、2、3、4、5 等 24 个章）" in message
    assert "沈墨" in message and "保留并归档" in message  # it has an ingested state change
    assert message.endswith("确认替换请加 --replace")
    assert report["would_delete"]["chapters"] == list(range(1, 25))
    assert "沈墨" in report["would_delete"]["entities_archived"]
    assert _snapshot() == before
    # told explicitly, it replaces the book (chapter 8 and what was ingested for it go with it)
    assert book_rebuild(root=other, replace=True)["ok"] is True
    assert Chapter.objects.filter(book__slug="demo-book").count() == 0
    assert Book.objects.get(slug="demo-book").root == str(other)


def test_a_rebuild_of_the_own_folder_dropping_most_chapters_is_refused(demo):
    chapters = sorted((demo / "定稿" / "正文").rglob("第*章.md"))
    assert len(chapters) == 24
    aside = demo.parent / "aside"
    aside.mkdir()
    for path in chapters[:13]:
        shutil.move(path, aside / path.name)
    before = _snapshot()
    report = book_rebuild(root=demo)
    assert report["ok"] is False
    assert report["errors"][0]["code"] == "would_delete"
    assert "将删除 13/24 章，超过一半" in report["errors"][0]["message"]
    assert "记录的文件夹" not in report["errors"][0]["message"]
    assert _snapshot() == before
    shutil.move(aside / chapters[0].name, chapters[0])  # 12 of 24: half is not "most"
    assert book_rebuild(root=demo)["ok"] is True
    assert Chapter.objects.filter(book__slug="demo-book").count() == 12


def test_a_sync_of_an_emptied_folder_is_refused_unless_replace(demo):
    book = Book.objects.get(slug="demo-book")
    shutil.rmtree(demo / "定稿")
    before = _snapshot()
    report = book_sync(book=book)
    assert report["ok"] is False
    assert report["errors"][0]["code"] == "would_delete"
    assert report["errors"][0]["message"].startswith("拒绝同步：将删除 24/24 章，超过一半（定稿/正文/")
    assert _snapshot() == before
    with pytest.raises(CommandError, match="同步失败：1 个错误，数据库未改动"):
        call_command("sync", "demo-book", stdout=StringIO())
    call_command("sync", "demo-book", "--replace", stdout=StringIO())
    assert Chapter.objects.filter(book=book).count() == 0


def test_the_rebuild_command_refuses_and_replace_goes_ahead(demo, tmp_path):
    other = tmp_path / "copy" / "demo-book"
    shutil.copytree(demo, other)
    out = StringIO()
    with pytest.raises(CommandError, match="重建失败：1 个错误，数据库未改动"):
        call_command("rebuild", str(other), stdout=out)
    assert "[would_delete]" in out.getvalue() and "记录的文件夹是" in out.getvalue()
    call_command("rebuild", str(other), "--replace", stdout=StringIO())
    assert Book.objects.get(slug="demo-book").root == str(other)
    assert Chapter.objects.filter(book__slug="demo-book").count() == 24


def test_a_card_moved_out_and_back_keeps_its_ingested_rows(demo, tmp_path):
    book = Book.objects.get(slug="demo-book")
    shenmo = Entity.objects.get(book=book, entity_id="shenmo")
    changes = list(StateChange.objects.filter(entity=shenmo).values_list("chapter", "field", "new"))
    relations = list(Relationship.objects.filter(from_entity=shenmo).values_list("to_entity__entity_id", "type"))
    assert changes and relations
    card = demo / "设定" / "角色" / "沈墨.md"
    moved = tmp_path / "沈墨.md"
    shutil.move(card, moved)
    report = book_sync(book=book)
    assert report["ok"] is True and report["removed"] == ["设定/角色/沈墨.md"]
    shenmo.refresh_from_db()
    assert (shenmo.pk, shenmo.archived, shenmo.source_path, shenmo.source) == (shenmo.pk, True, "", "file")
    assert changes == [(19, "possessions", "护心丹")]
    assert list(StateChange.objects.filter(entity=shenmo).values_list("chapter", "field", "new")) == changes
    assert book_rebuild(root=demo)["ok"] is True  # a full rebuild without the card keeps it too
    assert Entity.objects.get(pk=shenmo.pk).archived is True
    shutil.move(moved, card)
    assert book_sync(book=book)["ok"] is True
    back = Entity.objects.get(book=book, entity_id="shenmo")
    assert (back.pk, back.archived, back.source_path) == (shenmo.pk, False, "设定/角色/沈墨.md")
    assert list(StateChange.objects.filter(entity=back).values_list("chapter", "field", "new")) == changes
    assert list(Relationship.objects.filter(from_entity=back).values_list("to_entity__entity_id", "type")) == relations


def test_a_card_entity_without_ingested_rows_is_deleted_when_its_card_goes(demo):
    book = Book.objects.get(slug="demo-book")
    assert not StateChange.objects.filter(entity__entity_id="yunhezhenren").exists()
    (demo / "设定" / "角色" / "云鹤真人.md").unlink()
    assert book_sync(book=book)["ok"] is True
    assert not Entity.objects.filter(book=book, canonical_name="云鹤真人").exists()


def test_a_chapter_linked_to_etc_passwd_is_neither_indexed_nor_served(demo, api):
    book = Book.objects.get(slug="demo-book")
    link = demo / "定稿" / "正文" / "第2卷" / "第0025章.md"
    link.symlink_to("/etc/passwd")
    report = book_sync(book=book)
    assert report["unreadable"] == [
        {
            "file": "定稿/正文/第2卷/第0025章.md",
            "code": "outside_book",
            "message": "是指向书籍文件夹之外的符号链接，拒绝读取（确需如此请设置 WEBNOVEL_BOOK_LINKS_OUTSIDE=1）",
        }
    ]
    assert not Chapter.objects.filter(book=book, number=25).exists()
    rebuilt = book_rebuild(root=demo)
    assert [(e["code"], e["file"]) for e in rebuilt["errors"]] == [("outside_book", "定稿/正文/第2卷/第0025章.md")]
    assert api.get("/api/books/demo-book/chapters/24/body").status_code == 200
    assert api.get("/api/books/demo-book/chapters/25/body").status_code == 404
    found = api.get("/api/books/demo-book/search", {"q": "root"}).content.decode()
    assert "root:x:0:0" not in found
