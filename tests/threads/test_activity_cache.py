"""The activity map behind thread_hangs is cached per book until one of its rows changes: a bulk write
(the rebuilder's, no signal) moves its stamp, an in-place save (the admin) forgets it; nothing is kept
inside a transaction. Every answer equals the uncached build."""

import pytest
from django.db import transaction

from core.models import Chapter
from tests.factories import book_populated_make
from threads import selectors
from threads.models import Thread, ThreadHistoryEntry
from threads.selectors import thread_hangs

pytestmark = pytest.mark.django_db(transaction=True)


def _last(book, thread_id: str) -> int:
    row = thread_hangs(book=book)["threads"][thread_id]
    assert selectors._activity_map(book=book) == selectors._activity_map_build(book=book)
    return row["last_activity_chapter"]


def test_the_map_is_kept_until_a_row_of_it_changes():
    book = book_populated_make()
    assert (_last(book, "伏笔-001"), _last(book, "悬念-001")) == (3, 38)
    stamp, maps = selectors._activity_cache[book.pk]
    assert None in maps
    assert _last(book, "伏笔-001") == 3 and selectors._activity_cache[book.pk][0] == stamp  # kept

    thread = Thread.objects.get(book=book, thread_id="伏笔-001")
    ThreadHistoryEntry.objects.bulk_create([ThreadHistoryEntry(thread=thread, order=3, chapter=20, text="旧剑鸣")])
    assert _last(book, "伏笔-001") == 20  # a bulk insert moved the stamp

    Chapter.objects.filter(book=book, number=30).delete()  # a chapter replaced as the rebuilder does
    Chapter.objects.bulk_create([Chapter(book=book, number=30, volume=2, title="第30章标题", advances=["伏笔-001"])])
    assert _last(book, "伏笔-001") == 30

    chapter = Chapter.objects.get(book=book, number=39)  # saved in place: the signal forgets every map
    chapter.advances = ["悬念-001"]
    chapter.save()
    assert _last(book, "悬念-001") == 39
    other = Thread.objects.get(book=book, thread_id="悬念-001")
    other.opened_chapter = 40
    other.save()
    assert _last(book, "悬念-001") == 40


def test_an_as_of_map_is_cached_beside_the_current_one():
    book = book_populated_make()
    assert thread_hangs(book=book, as_of=2)["threads"]["伏笔-001"]["last_activity_chapter"] == 1
    assert thread_hangs(book=book)["threads"]["伏笔-001"]["last_activity_chapter"] == 3
    assert set(selectors._activity_cache[book.pk][1]) == {2, None}


def test_nothing_is_kept_inside_a_transaction():
    book = book_populated_make()
    selectors.activity_forget()
    with transaction.atomic():
        assert thread_hangs(book=book)["threads"]["伏笔-001"]["last_activity_chapter"] == 3
    assert book.pk not in selectors._activity_cache
