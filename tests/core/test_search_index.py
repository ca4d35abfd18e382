"""The search index's bookkeeping: a full pass re-indexes only chapters whose content hash changed,
drops chapters that are gone, and keeps the FTS table in step with the line table (no triggers)."""

import pytest
from django.db import connection

from core import search
from core.models import Book, Chapter, Volume

pytestmark = pytest.mark.django_db


@pytest.fixture
def book(db):
    book = Book.objects.create(slug="b", title="书", root="/tmp/b")
    Volume.objects.create(book=book, number=1, start_chapter=1, end_chapter=10)
    return book


def chapter(book, number, body, content_hash):
    return Chapter.objects.create(book=book, number=number, volume=1, body=body, content_hash=content_hash)


def hits(book, q):
    data = search.search_keyword(book=book, q=q)
    return data["total"], [(h["chapter"], h["line"]) for h in data["hits"]]


def fts_rows(book_id=None):
    # The FTS table answers for every row it was told about; a stale entry would be a phantom hit.
    with connection.cursor() as cur:
        if connection.vendor == "sqlite":
            cur.execute(f"SELECT COUNT(*) FROM {search.FTS_TABLE} WHERE {search.FTS_TABLE} MATCH '\"青铜剑\"'")
        else:
            cur.execute(f"SELECT COUNT(*) FROM {search.LINE_TABLE} WHERE text LIKE '%%青铜剑%%'")
        return cur.fetchone()[0]


def test_full_pass_reindexes_only_changed_chapters(book):
    chapter(book, 1, "青铜剑在此\n\n又见青铜剑", "h1")
    chapter(book, 2, "无关的一行", "h2")
    assert search.search_index_update(book=book) == 3
    assert search.search_index_update(book=book) == 0  # nothing changed: nothing written
    Chapter.objects.filter(book=book, number=2).update(body="第二章也有青铜剑", content_hash="h2b")
    assert search.search_index_update(book=book) == 1
    assert hits(book, "青铜剑") == (3, [(1, 1), (1, 3), (2, 1)])
    assert fts_rows() == 3


def test_full_pass_drops_removed_chapters_and_explicit_numbers_always_reindex(book):
    chapter(book, 1, "青铜剑", "h1")
    chapter(book, 2, "青铜剑二", "h2")
    search.search_index_update(book=book)
    Chapter.objects.filter(book=book, number=2).delete()
    assert search.search_index_update(book=book) == 0
    assert hits(book, "青铜剑") == (1, [(1, 1)])
    # Finalize / sync name the chapters they changed: those are re-indexed whatever the hash says.
    Chapter.objects.filter(book=book, number=1).update(body="青铜刀")
    assert search.search_index_update(book=book, numbers=[1]) == 1
    assert hits(book, "青铜剑") == (0, [])
    assert hits(book, "青铜刀") == (1, [(1, 1)])
    assert fts_rows() == 0


def test_finalizing_chapters_of_a_book_without_lines_yet_records_them_once(book):
    # Blank chapters are recorded (hash) but have no line: finalizing one again must replace its
    # record, not insert a second one (the per-chapter record is keyed by book and chapter).
    chapter(book, 1, "   ", "h1")
    chapter(book, 2, "", "h2")
    assert search.search_index_update(book=book) == 0
    assert search.search_index_update(book=book, numbers=[1]) == 0
    Chapter.objects.filter(book=book, number=1).update(body="青铜剑", content_hash="h1b")
    assert search.search_index_update(book=book, numbers=[1], removed=[2]) == 1
    with connection.cursor() as cur:
        cur.execute(f"SELECT chapter, content_hash FROM {search.CHAPTER_TABLE} WHERE book_id = %s", [book.pk])
        assert sorted(cur.fetchall()) == [(1, f"{search.INDEX_FORMAT}:h1b"), (2, f"{search.INDEX_FORMAT}:h2")]
    assert hits(book, "青铜剑") == (1, [(1, 1)])


def test_chapters_without_a_hash_are_always_reindexed(book):
    chapter(book, 1, "青铜剑", "")
    search.search_index_update(book=book)
    Chapter.objects.filter(book=book, number=1).update(body="青铜剑\n青铜剑")
    assert search.search_index_update(book=book) == 2
    assert hits(book, "青铜剑") == (2, [(1, 1), (1, 2)])


def test_two_books_keep_their_own_lines(book):
    other = Book.objects.create(slug="c", title="另一本", root="/tmp/c")
    Volume.objects.create(book=other, number=1, start_chapter=1, end_chapter=10)
    chapter(book, 1, "青铜剑甲", "h1")
    chapter(other, 1, "青铜剑乙", "h1")
    search.search_index_update(book=book)
    search.search_index_update(book=other)
    other.delete()
    assert hits(book, "青铜剑") == (1, [(1, 1)])
    assert fts_rows() == 1
    with connection.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {search.CHAPTER_TABLE}")
        assert cur.fetchone()[0] == 1


def test_body_lines_numbers_non_blank_lines():
    assert search.body_lines("甲\n\n  \n乙") == [(1, "甲"), (4, "乙")]


def test_a_bulk_pass_gives_fts5_a_larger_hash_and_the_same_hits(book, monkeypatch):
    # A full pass of FTS_BULK_CHAPTERS chapters or more writes with FTS5's 'hashsize' raised (fewer,
    # larger segments); what the index answers is the same as with the default.
    for n in (1, 2, 3):
        chapter(book, n, f"第{n}行青铜剑\n\n铁剑{n}", f"h{n}")
    monkeypatch.setattr(search, "FTS_BULK_CHAPTERS", 4)
    assert search.search_index_update(book=book) == 6  # 3 chapters: below the bulk size
    if connection.vendor == "sqlite":
        with connection.cursor() as cur:
            cur.execute(f"SELECT v FROM {search.FTS_TABLE}_config WHERE k = 'hashsize'")
            assert cur.fetchall() == []
    small = hits(book, "青铜剑"), hits(book, "铁剑2")
    monkeypatch.setattr(search, "FTS_BULK_CHAPTERS", 3)
    Chapter.objects.filter(book=book).update(content_hash="changed")
    assert search.search_index_update(book=book) == 6
    if connection.vendor == "sqlite":
        with connection.cursor() as cur:
            cur.execute(f"SELECT v FROM {search.FTS_TABLE}_config WHERE k = 'hashsize'")
            assert cur.fetchall() == [(16 << 20,)]
    assert (hits(book, "青铜剑"), hits(book, "铁剑2")) == small == ((3, [(1, 1), (2, 1), (3, 1)]), (1, [(2, 3)]))
    assert fts_rows() == 3


def test_the_fts_index_keeps_no_token_counts_and_still_forgets_deleted_lines(book):
    """Issue 29: nothing ranks by bm25, so the FTS table is created with columnsize=0 (migration 0017):
    no per-line row in a _docsize table; the 'delete' command still works on it."""
    if connection.vendor != "sqlite":
        pytest.skip("the FTS5 table is SQLite's (PostgreSQL indexes the lines with pg_trgm)")
    with connection.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = %s", [f"{search.FTS_TABLE}_docsize"])
        assert cur.fetchone()[0] == 0
    chapter(book, 1, "青铜剑在此\n另一行青铜剑", "h1")
    search.search_index_update(book=book)
    assert (hits(book, "青铜剑"), fts_rows()) == ((2, [(1, 1), (1, 2)]), 2)
    Chapter.objects.filter(book=book, number=1).update(body="只剩一行青铜剑", content_hash="h1b")
    search.search_index_update(book=book)
    assert (hits(book, "青铜剑"), fts_rows()) == ((1, [(1, 1)]), 1)
