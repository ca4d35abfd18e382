"""A thread's last activity when the chapters that touch threads span several decoding batches
(``threads.selectors._thread_refs`` decodes the raw JSON lists 200 rows at a time)."""

import pytest

from core.models import Book, Chapter, Volume
from threads import selectors
from threads.models import Thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def book(db):
    book = Book.objects.create(slug="b", title="书", root="/tmp/b", thresholds={"伏笔": 100, "悬念": 100})
    Volume.objects.create(book=book, number=1, start_chapter=1, end_chapter=500)
    Thread.objects.create(book=book, thread_id="伏笔-001", type="伏笔", opened_chapter=1)
    Thread.objects.create(book=book, thread_id="悬念-002", type="悬念", opened_chapter=3)
    chapters = []
    for n in range(1, 451):
        opens = ["伏笔-001"] if n == 1 else ["悬念-002"] if n == 3 else []
        # Every chapter touches some thread, so the walk from the newest chapter reads them all;
        # 伏笔-001 is advanced in chapter 30 only: the last, partial batch when walking down.
        advances = ["伏笔-001", "悬念-0020"] if n == 30 else [f"伏笔-{n:03d}x", "悬念-00"]
        chapters.append(Chapter(book=book, number=n, volume=1, opens=opens, advances=advances))
    Chapter.objects.bulk_create(chapters)
    return book


def test_last_activity_is_found_in_a_later_batch(book):
    data = selectors.thread_basics(book=book, thread_id="伏笔-001")
    assert (data["last_activity_chapter"], data["hang"], data["overdue"]) == (30, 420, True)
    # An id that is only a prefix of another id ("悬念-0020") is not activity of 悬念-002.
    data = selectors.thread_basics(book=book, thread_id="悬念-002")
    assert (data["last_activity_chapter"], data["hang"], data["overdue"]) == (3, 447, True)


def test_overdue_list_reads_every_batch_the_same_way(book):
    rows = selectors.thread_list_overdue(book=book)["threads"]
    assert [(r["id"], r["last_activity_chapter"], r["over_by"]) for r in rows] == [
        ("悬念-002", 3, 347),
        ("伏笔-001", 30, 320),
    ]


def test_sqlite_reads_the_thread_refs_from_their_index_and_gives_the_same_map(book):
    """Issue 29: on SQLite the activity map reads the chapters that open or advance a thread from the
    partial covering index of migration 0016 (not the chapter rows, which hold the bodies)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("the partial covering index is SQLite's (a PostgreSQL B-tree entry is size-capped)")
    Chapter.objects.create(book=book, number=451, volume=1)  # touches no thread: not in the index
    with connection.cursor() as cur:
        cur.execute("EXPLAIN QUERY PLAN " + selectors._REFS_SQL + " AND number <= %s", [book.pk, 40])
        plan = " ".join(str(row) for row in cur.fetchall())
    assert "COVERING INDEX chapter_thread_refs_idx" in plan
    chapters = Chapter.objects.filter(book=book)
    for upto in (None, 30, 29):
        rows = list(selectors._chapters_with_refs(book=book, chapters=chapters, upto=upto))
        wanted = chapters if upto is None else chapters.filter(number__lte=upto)
        assert rows == list(selectors._thread_refs(wanted.exclude(opens=[], advances=[])))
    assert len(rows) == 29
    assert selectors._activity_map_build(book=book, upto=29)["伏笔-001"] == 1
    assert selectors._activity_map_build(book=book)["伏笔-001"] == 30
