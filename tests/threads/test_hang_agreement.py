"""One meaning of "how long a thread has hung" (threads.selectors.thread_hangs): threads/overdue,
the thread read, the memory health report, the context pack and the dashboard agree on every
thread — on the demo book and on a synthetic one (bench/gen_book.py)."""

import pytest

from bench.gen_book import generate_book
from bookfiles.rebuilder import book_rebuild
from core.models import Book
from dashboard import sources
from memory.orchestrator import build_memory_pack
from memory.selectors import memory_health
from tests.conftest import DEMO_BOOK
from threads.selectors import thread_hangs

pytestmark = pytest.mark.django_db


def _rebuilt(root, capture) -> Book:
    with capture(execute=True):  # the memory hook runs on commit: it derives the open loops
        report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    return Book.objects.get(root=str(root))


def _pack_overdue(book: Book, chapter: int) -> set[str]:
    pack = build_memory_pack(book=book, number=chapter, budget_tokens=200_000)
    return {
        it["title"].split("·")[1] for it in pack["items"] if it["kind"] == "open_loops" and "【超期：" in it["title"]
    }


def _agree(book: Book, api) -> dict[str, dict]:
    """Every reader's answer at the current chapter equals thread_hangs'; returns its rows."""
    rows = thread_hangs(book=book)["threads"]
    current = thread_hangs(book=book)["current_chapter"]
    overdue = {tid for tid, row in rows.items() if row["overdue"]}
    listed = api.get(f"/api/books/{book.slug}/threads/overdue").json()
    assert {t["id"]: t["hang"] for t in listed["threads"]} == {tid: rows[tid]["hang"] for tid in overdue}
    for tid, row in rows.items():
        basics = api.get(f"/api/books/{book.slug}/threads/{tid}").json()
        assert (basics["hang"], basics["overdue"], basics["overdue_reason"]) == (
            row["hang"],
            row["overdue"],
            row["overdue_reason"],
        ), tid
    board = {t["thread_id"]: t for t in sources.threads_open(book=book)}
    assert {tid: (t["hang"], t["overdue"]) for tid, t in board.items()} == {
        tid: (row["hang"] or 0, row["overdue"]) for tid, row in rows.items()
    }
    health = api.get(f"/api/books/{book.slug}/memory/health").json()
    assert {o["thread"]: (o["hanging"], o["reason"]) for o in health["open_loops_overdue"]} == {
        tid: (rows[tid]["hang"], rows[tid]["overdue_reason"]) for tid in overdue
    }
    # The pack for the next chapter is written as of the current one.
    assert _pack_overdue(book, current + 1) == overdue
    return rows


def test_the_demo_book_agrees_everywhere(db, api, django_capture_on_commit_callbacks):
    if not (DEMO_BOOK / "book.yaml").exists():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    book = _rebuilt(DEMO_BOOK, django_capture_on_commit_callbacks)
    rows = _agree(book, api)
    assert {tid: row["hang"] for tid, row in rows.items()} == {
        "伏笔-001": 4,
        "伏笔-003": 1,
        "伏笔-004": 6,
        "悬念-001": 16,
        "悬念-003": 0,
        "感情线-001": 2,
        "感情线-003": 3,
    }
    assert [tid for tid, row in rows.items() if row["overdue"]] == ["悬念-001"]
    # At chapter 30 the health report counts from the last activity too: 感情线-001 advanced in
    # chapter 22 (8 chapters, under 20), 悬念-001 last in 8 (22, over 10).
    at_30 = memory_health(book=book, chapter=30)
    assert [(o["thread"], o["hanging"], o["last_activity"]) for o in at_30["open_loops_overdue"]] == [
        ("悬念-001", 22, 8)
    ]
    # In the past: at chapter 12, 悬念-002 (opened 12, closed 19) was open and 伏笔-002 (closed 14) too.
    past = thread_hangs(book=book, as_of=12)["threads"]
    assert {tid: row["hang"] for tid, row in past.items()} == {
        "伏笔-001": 1,
        "伏笔-002": 5,
        "伏笔-003": 3,
        "伏笔-004": 0,
        "悬念-001": 4,
        "悬念-002": 0,
        "感情线-001": 2,
    }
    health_12 = memory_health(book=book, chapter=12)
    assert [o["thread"] for o in health_12["open_loops_overdue"]] == []
    assert _pack_overdue(book, 13) == set()


def test_a_synthetic_book_agrees_everywhere(tmp_path, api, django_capture_on_commit_callbacks):
    root = tmp_path / "book"
    generate_book(root, chapters=80, seed=5, entities=30, aliases=40, threads=14, secrets=3, chars_per_chapter=300)
    book = _rebuilt(root, django_capture_on_commit_callbacks)
    rows = _agree(book, api)
    assert len(rows) >= 3
    # The book has overdue threads and threads that are not: the agreement is not vacuous.
    assert {row["overdue"] for row in rows.values()} == {True, False}
    middle = thread_hangs(book=book, as_of=40)["threads"]
    health = memory_health(book=book, chapter=40)
    assert {o["thread"] for o in health["open_loops_overdue"]} == {t for t, r in middle.items() if r["overdue"]}
    assert _pack_overdue(book, 41) == {t for t, r in middle.items() if r["overdue"]}
