"""Core read selectors on small hand-made rows: the edges the demo book does not reach."""

import pytest
from django.utils import timezone

from core import selectors
from core.models import Book, Chapter, Fingerprint, TimelineRow, Volume
from kernel.exceptions import InvalidInput, NotFound

pytestmark = pytest.mark.django_db


@pytest.fixture
def book(db):
    book = Book.objects.create(slug="b", title="书", root="/tmp/b", style_baseline_start=1, style_baseline_end=2)
    Volume.objects.create(book=book, number=1, start_chapter=1, end_chapter=2)
    Volume.objects.create(book=book, number=2, start_chapter=3, end_chapter=4)
    return book


def test_recent_tails_before_a_chapter_and_bounds(book):
    for n in range(1, 5):
        Chapter.objects.create(book=book, number=n, body=f"第{n}章正文。\n\n")
    assert selectors.chapter_recent_tails(book=book, count=2, chars=3, before=3) == [
        {"number": 1, "title": "", "tail": "章正文。"[-3:]},
        {"number": 2, "title": "", "tail": "章正文。"[-3:]},
    ]
    with pytest.raises(InvalidInput, match="count"):
        selectors.chapter_recent_tails(book=book, count=0)


def test_current_volume_follows_the_newest_chapter(book):
    Chapter.objects.create(book=book, number=3)  # no volume: found from the volume ranges
    TimelineRow.objects.create(book=book, volume=2, order=0, chapter=3, event="启程")
    assert selectors.timeline_current(book=book) == {
        "volume": 2,
        "rows": [{"chapter": 3, "story_time": "", "event": "启程", "present": []}],
    }
    assert [block["volume"] for block in selectors.timeline_recent(book=book)] == [1, 2]


def test_style_drift_sums_counts_before_dividing(book):
    counts = {1: (100, 10), 2: (300, 10), 3: (100, 5), 4: (100, 5)}  # chars, sentences
    for n, (chars, sentences) in counts.items():
        Chapter.objects.create(book=book, number=n)
        Fingerprint.objects.create(
            book=book, start_chapter=n, end_chapter=n, features={"chars": chars, "sentences": sentences}
        )
    data = selectors.style_drift(book=book)
    assert data["baseline"] == {"start": 1, "end": 2, "chapters": 2}
    assert data["current"] == {"start": 3, "end": 4, "chapters": 2}
    # Baseline 400/20 = 20 (not the mean of 10 and 30 = 20 by luck: current 200/10 = 20 too).
    assert data["features"][0] == {
        "feature": "avg_sentence_length",
        "baseline": 20.0,
        "current": 20.0,
        "change": 0.0,
        "drifted": False,
    }
    # A feature whose baseline is 0 has no relative change.
    assert {f["feature"]: f for f in data["features"]}["dialogue_ratio"] == {
        "feature": "dialogue_ratio",
        "baseline": 0.0,
        "current": 0.0,
        "change": None,
        "drifted": False,
    }
    Fingerprint.objects.filter(start_chapter=4).update(features={"chars": 400, "sentences": 5})
    feature = selectors.style_drift(book=book)["features"][0]
    assert (feature["current"], feature["change"], feature["drifted"]) == (50.0, 1.5, True)


def test_style_drift_without_a_baseline_says_how_to_set_it(book):
    Book.objects.filter(pk=book.pk).update(style_baseline_start=None, style_baseline_end=None)
    book.refresh_from_db()
    with pytest.raises(NotFound) as exc:
        selectors.style_drift(book=book)
    assert exc.value.message == (
        "《书》的 book.yaml 没有设置 style_baseline（文风基线：以哪几章的文风为准），无法比较文风漂移。"
        "请在书籍文件夹的 book.yaml 里加一行，例如：style_baseline: [1, 10]（以第1–10章为基线），然后运行 sync。"
    )
    # The example is a range the book has: its first ten finalized chapters, or all of them.
    for n in range(3, 6):
        Chapter.objects.create(book=book, number=n, body="正文。")
    with pytest.raises(NotFound) as exc:
        selectors.style_drift(book=book)
    assert exc.value.extra == {"book": "b", "field": "style_baseline", "example": "style_baseline: [3, 5]"}


def test_weak_hook_streak_stops_at_the_first_strong_hook(book):
    for n, hook in enumerate(["危机钩-弱", "危机钩-强", "期待钩-弱", "情感钩-弱"], start=1):
        Chapter.objects.create(book=book, number=n, hook_type=hook)
    data = selectors.weak_hook_streak(book=book)
    assert (data["streak"], data["chapters"], data["reported"]) == (2, [3, 4], False)


def test_book_get_reads_the_row_as_the_orm_does(db):
    """``book_get`` reads its row in plain SQL (issue 29): every field decoded as the ORM decodes it."""
    built = timezone.now()
    Book.objects.create(
        slug="青岚",
        title="青岚剑录",
        root="/tmp/q",
        config={"title": "青岚剑录", "volumes": [{"number": 1}]},
        thresholds={"伏笔": 30},
        built_at=built,
        build_report={"ok": True, "errors": []},
        journal_id="abc",
    )
    book = selectors.book_get(slug="青岚")
    orm = Book.objects.get(slug="青岚")
    fields = [f.attname for f in Book._meta.concrete_fields]
    assert [getattr(book, f) for f in fields] == [getattr(orm, f) for f in fields]
    assert (book.built_at, book.config["volumes"], book.threshold("伏笔")) == (built, [{"number": 1}], 30)
    assert (book._state.adding, book._state.db) == (False, "default")
    with pytest.raises(NotFound, match="书籍 '无' 不存在"):
        selectors.book_get(slug="无")
