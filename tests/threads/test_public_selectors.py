"""The public selectors the dashboard reads: open threads with their hang, who knows a secret,
and style features from summed fingerprint counts."""

import pytest

from core.models import Book, Chapter, Volume
from core.selectors import STYLE_FEATURES, fingerprint_features_derive
from threads import selectors
from threads.models import Secret, Thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def book(db):
    book = Book.objects.create(slug="b", title="书", root="/tmp/b", thresholds={"悬念": 3})
    Volume.objects.create(book=book, number=1, start_chapter=1, end_chapter=10)
    return book


def test_thread_list_open_with_hang(book):
    Thread.objects.create(book=book, thread_id="悬念-002", type="悬念", opened_chapter=4)
    Thread.objects.create(book=book, thread_id="悬念-001", type="悬念", opened_chapter=1)
    Thread.objects.create(book=book, thread_id="悬念-003", type="悬念", opened_chapter=1, status="已回收")
    Chapter.objects.create(book=book, number=1, volume=1, opens=["悬念-001"])
    Chapter.objects.create(book=book, number=6, volume=1)
    data = selectors.thread_list_open_with_hang(book=book)
    assert data["current_chapter"] == 6
    rows = [(r["id"], r["last_activity_chapter"], r["hang"], r["threshold"], r["overdue"]) for r in data["threads"]]
    assert rows == [("悬念-001", 1, 5, 3, True), ("悬念-002", 4, 2, 3, False)]
    assert [t["id"] for t in selectors.thread_list_overdue(book=book)["threads"]] == ["悬念-001"]


def test_secret_known_to_normalizes_plain_names(book):
    secret = Secret.objects.create(
        book=book, secret_id="信息差-001", registered_chapter=2, known_to=["甲", {"name": "乙", "since": 5}, {"x": 1}]
    )
    assert selectors.secret_known_to(secret=secret) == [{"name": "甲", "since": 2}, {"name": "乙", "since": 5}]


def test_fingerprint_features_derive_skips_zero_denominators():
    name, (num, den, scale) = next(iter(STYLE_FEATURES.items()))
    assert fingerprint_features_derive(totals={num: 1, den: 3}) == {name: round(1 / 3 * scale, 4)}
    assert fingerprint_features_derive(totals={num: 1, den: 0}) == {}


def test_thread_hangs_overdue_is_the_one_test_of_overdue(book):
    Thread.objects.create(book=book, thread_id="悬念-002", type="悬念", opened_chapter=4)
    Thread.objects.create(book=book, thread_id="悬念-001", type="悬念", opened_chapter=1)
    Chapter.objects.create(book=book, number=1, volume=1, opens=["悬念-001"])
    Chapter.objects.create(book=book, number=6, volume=1)
    now = selectors.thread_hangs_overdue(book=book)
    assert (now["as_of"], now["current_chapter"]) == (6, 6)
    assert [(r["id"], r["hang"], r["overdue_reason"]) for r in now["threads"]] == [
        ("悬念-001", 5, "已悬置 5 章（最后推进于第1章），超过阈值 3")
    ]
    assert selectors.thread_hangs_overdue(book=book, as_of=4)["threads"] == []  # hung 3 chapters: not > 3
    assert [r["id"] for r in selectors.thread_hangs_overdue(book=book, as_of=5)["threads"]] == ["悬念-001"]
    # the chart's limit line: the last chapter before the hang passes the threshold
    assert selectors.thread_hang_limit(last_activity=1, threshold=3) == 4
    assert selectors.thread_hang_limit(last_activity=None, threshold=3) is None
