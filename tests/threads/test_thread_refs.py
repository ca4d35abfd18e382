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
