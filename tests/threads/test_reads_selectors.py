"""Hang, accumulation and leak rules of threads.selectors on small hand-made rows: every value is
computed at query time from the current chapter, so adding a chapter changes the answers."""

import pytest

from core import search
from core.models import Book, Chapter, Volume
from entities.models import Alias, Entity
from threads import selectors
from threads.models import Secret, Thread, ThreadHistoryEntry

pytestmark = pytest.mark.django_db


def chapter(book, number, body="", **fields):
    return Chapter.objects.create(book=book, number=number, volume=1, body=body, **fields)


@pytest.fixture
def book(db):
    book = Book.objects.create(slug="b", title="书", root="/tmp/b", thresholds={"悬念": 3, "secret_accumulation": 4})
    Volume.objects.create(book=book, number=1, start_chapter=1, end_chapter=10)
    return book


def test_hang_counts_from_the_latest_activity_of_any_kind(book):
    thread = Thread.objects.create(book=book, thread_id="悬念-001", type="悬念", opened_chapter=1)
    chapter(book, 1, opens=["悬念-001"])
    chapter(book, 2, advances=["悬念-001"])
    chapter(book, 6)
    data = selectors.thread_basics(book=book, thread_id="悬念-001")
    assert (data["last_activity_chapter"], data["hang"], data["threshold"], data["overdue"]) == (2, 4, 3, True)
    # A 履历 entry citing chapter 5 is activity too.
    ThreadHistoryEntry.objects.create(thread=thread, order=0, chapter=5, text="又响了")
    data = selectors.thread_basics(book=book, thread_id="悬念-001")
    assert (data["last_activity_chapter"], data["hang"], data["overdue"]) == (5, 1, False)
    # Finalizing more chapters makes it hang longer: never stored, always computed.
    chapter(book, 9)
    assert selectors.thread_list_overdue(book=book)["threads"][0]["hang"] == 4


def test_threads_not_in_progress_never_hang(book):
    Thread.objects.create(book=book, thread_id="悬念-001", type="悬念", opened_chapter=1, status="已放弃")
    chapter(book, 9)
    assert selectors.thread_basics(book=book, thread_id="悬念-001")["hang"] is None
    assert selectors.thread_list_overdue(book=book) == {"current_chapter": 9, "threads": []}


def test_default_threshold_applies_when_book_yaml_is_silent(book):
    Thread.objects.create(book=book, thread_id="伏笔-001", type="伏笔", opened_chapter=1)
    chapter(book, 32)
    data = selectors.thread_basics(book=book, thread_id="伏笔-001")
    assert (data["hang"], data["threshold"], data["overdue"]) == (31, 30, True)


def test_secret_accumulation_and_plain_known_to(book):
    Secret.objects.create(book=book, secret_id="信息差-001", registered_chapter=2, known_to=["甲"], keywords=["玉"])
    Secret.objects.create(book=book, secret_id="信息差-002", registered_chapter=5, reader_knows=True)
    chapter(book, 7)
    assert selectors.secret_list_unknown(book=book)["secrets"] == [
        {"id": "信息差-001", "title": "", "registered_chapter": 2, "accumulated": 5, "over_limit": True}
    ]
    assert selectors.secret_basics(book=book, secret_id="信息差-001")["known_to"] == [{"name": "甲", "since": 2}]


def test_leak_scan_resolves_perspective_aliases_and_since(book):
    person = Entity.objects.create(book=book, entity_id="jia", type="角色", canonical_name="甲")
    Alias.objects.create(book=book, entity=person, alias="阿甲")
    Secret.objects.create(
        book=book,
        secret_id="信息差-001",
        registered_chapter=1,
        reader_knows=True,
        reader_told_chapter=1,
        known_to=[{"name": "甲", "since": 3}],
        keywords=["玉佩"],
    )
    chapter(book, 2, body="他摸了摸玉佩。", perspective="阿甲")  # 甲 learns it only in chapter 3
    chapter(book, 3, body="玉佩发烫。", perspective="阿甲")
    chapter(book, 4, body="玉佩碎了。", perspective="乙")
    search.search_index_update(book=book)
    leaks = selectors.leak_scan(book=book)["leaks"]
    assert [(x["chapter"], x["perspective"], x["reasons"], x["lines"]) for x in leaks] == [
        (2, "阿甲", ["pov_unaware"], [1]),
        (4, "乙", ["pov_unaware"], [1]),
    ]
    assert selectors.leak_scan(book=book, limit=1) == {
        "secrets_scanned": 1,
        "total": 2,
        "leaks": [leaks[0]],
    }


def test_leak_scan_groups_a_chapter_and_lists_every_keyword_and_line(book):
    Secret.objects.create(book=book, secret_id="信息差-001", registered_chapter=1, keywords=["玉佩", "残玉"])
    chapter(book, 2, body="玉佩\n无关\n残玉与玉佩\n")
    search.search_index_update(book=book)
    assert selectors.leak_scan(book=book)["leaks"] == [
        {
            "secret": "信息差-001",
            "chapter": 2,
            "perspective": None,
            "reasons": ["reader_not_told"],
            "keywords": ["玉佩", "残玉"],
            "lines": [1, 3],
            "context": "玉佩",
        }
    ]


def test_search_index_follows_changed_and_removed_chapters(book):
    chapter(book, 1, body="青岚山下\n断剑\n")
    chapter(book, 2, body="断剑重光")
    assert search.search_index_update(book=book) == 3
    assert [(h["chapter"], h["line"]) for h in search.search_keyword(book=book, q="断剑")["hits"]] == [(1, 2), (2, 1)]
    Chapter.objects.filter(book=book, number=1).update(body="无剑")
    Chapter.objects.filter(book=book, number=2).delete()
    search.search_index_update(book=book, numbers=[1], removed=[2])
    assert search.search_keyword(book=book, q="断剑")["total"] == 0
    assert search.search_keyword(book=book, q="无剑")["hits"] == [{"chapter": 1, "line": 1, "context": "无剑"}]


def test_search_builds_a_missing_index_on_first_use(book):
    chapter(book, 1, body="第一行\n雨夜拾剑于后山\n")
    assert search.search_keyword(book=book, q="拾剑于")["hits"] == [
        {"chapter": 1, "line": 2, "context": "雨夜拾剑于后山"}
    ]


def test_long_lines_are_cut_around_the_hit(book):
    chapter(book, 1, body="甲" * 200 + "断剑" + "乙" * 200)
    context = search.search_keyword(book=book, q="断剑")["hits"][0]["context"]
    assert context == "…" + "甲" * 60 + "断剑" + "乙" * 60 + "…"


def test_deleting_a_book_drops_its_index(book):
    chapter(book, 1, body="断剑")
    search.search_index_update(book=book)
    book_id = book.pk
    book.delete()
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM webnovel_search_line WHERE book_id = %s", [book_id])
        assert cur.fetchone()[0] == 0


def test_two_character_queries_use_the_index_and_find_line_ends(book):
    chapter(book, 1, body="玉佩\n他摸出玉佩看了看\n玉佩。\n无关\n")
    chapter(book, 2, body="一块玉佩\n")
    search.search_index_update(book=book)
    data = search.search_keyword(book=book, q="玉佩")
    assert (data["total"], [(h["chapter"], h["line"]) for h in data["hits"]]) == (4, [(1, 1), (1, 2), (1, 3), (2, 1)])
    assert data["hits"][0]["context"] == "玉佩"  # the stored line-end mark never shows
    assert search.search_keyword(book=book, q="佩看")["total"] == 1
    assert search.search_keyword(book=book, q="龙珠")["total"] == 0
    assert search.search_keyword(book=book, q="佩")["total"] == 4  # one character: the line scan
