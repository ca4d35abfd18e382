"""On SQLite the activity map is one statement (``threads.selectors._activity_map_sql``); it gives the map the
ORM path gives (``_activity_map_orm``, the one every other database uses), at any ``upto``."""

import pytest
from django.db import connection

from core.models import Book, Chapter
from threads import selectors
from threads.models import Thread, ThreadHistoryEntry

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite only: the one-statement map reads json_each"),
]


@pytest.fixture
def book(db):
    book = Book.objects.create(slug="b", title="书", root="/tmp/b")
    opened = Thread.objects.create(book=book, thread_id="伏笔-001", type="伏笔", opened_chapter=2)
    Thread.objects.create(book=book, thread_id="伏笔-002", type="伏笔", opened_chapter=9)  # later refs: none
    unopened = Thread.objects.create(book=book, thread_id="悬念-001", type="悬念")
    Thread.objects.create(book=book, thread_id="悬念-002", type="悬念")  # cited at chapter 0 only
    Thread.objects.create(book=book, thread_id="感情线-001", type="感情线")  # never cited
    ThreadHistoryEntry.objects.create(thread=opened, order=1, chapter=7, text="旧剑鸣")
    ThreadHistoryEntry.objects.create(thread=unopened, order=1, chapter=4, text="初见")
    ThreadHistoryEntry.objects.create(thread=unopened, order=2, chapter=None, text="未标章")
    refs = {0: ([], ["悬念-002"]), 3: (["悬念-001"], []), 5: ([], ["伏笔-001", "伏笔-009"]), 6: ([], ["悬念-001"])}
    Chapter.objects.bulk_create(
        Chapter(book=book, number=n, opens=refs.get(n, ([], []))[0], advances=refs.get(n, ([], []))[1])
        for n in range(0, 11)
    )
    return book


def test_the_statement_gives_the_orm_map(book):
    assert selectors._activity_map_sql(book=book) == {"伏笔-001": 7, "伏笔-002": 9, "悬念-001": 6, "伏笔-009": 5}
    assert selectors._activity_map_sql(book=book, upto=5) == {"伏笔-001": 5, "悬念-001": 4, "伏笔-009": 5}
    assert selectors._activity_map_sql(book=book, upto=0) == {}
    for upto in (None, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11):
        assert selectors._activity_map_sql(book=book, upto=upto) == selectors._activity_map_orm(book=book, upto=upto)
