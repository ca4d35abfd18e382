"""The demo book (examples/demo-book) rebuilds cleanly and carries the facts its README promises."""

import pytest

from entities.models import Alias, Entity
from entities.selectors import alias_resolve
from tests.conftest import DEMO_BOOK
from threads.models import Secret, Thread
from webnovel.exceptions import Ambiguous, NotFound
from webnovel.models import Book, Chapter, SourceFile, Volume
from webnovel.rebuilder import book_rebuild

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db):
    report = book_rebuild(root=DEMO_BOOK)
    return report, Book.objects.get(slug="demo-book")


def test_demo_book_rebuilds_without_errors_or_warnings(demo):
    report, _ = demo
    assert report["ok"] is True
    assert report["errors"] == []
    assert report["warnings"] == []


def test_demo_book_counts(demo):
    report, _ = demo
    assert report["counts"] == {
        "chapters": 24,
        "volumes": 2,
        "threads": 10,
        "secrets": 4,
        "entities": 22,
        "aliases": 35,
        "documents": 11,
        "sections": 34,
        "timeline_rows": 24,
        "fingerprints": 24,
        "words": 9743,
    }


def test_demo_book_config(demo):
    _, book = demo
    assert book.title == "青岚剑录"
    assert book.genre == "仙侠"
    assert (book.style_baseline_start, book.style_baseline_end) == (1, 10)
    assert book.threshold("伏笔") == 30
    assert book.threshold("悬念") == 10
    assert book.threshold("感情线") == 20
    assert book.threshold("secret_accumulation") == 15
    assert book.threshold("weak_hook_streak") == 3
    volumes = list(Volume.objects.filter(book=book).values_list("number", "name", "start_chapter", "end_chapter"))
    assert volumes == [(1, "青岚初鸣", 1, 12), (2, "雾海问剑", 13, 24)]


def test_demo_book_chapters(demo):
    _, book = demo
    chapters = Chapter.objects.filter(book=book)
    assert list(chapters.values_list("number", flat=True)) == list(range(1, 25))
    assert list(chapters.filter(volume=1).values_list("number", flat=True)) == list(range(1, 13))
    assert list(chapters.filter(key_chapter=True).values_list("number", flat=True)) == [1, 11, 20, 22]
    assert all(300 <= c.word_count <= 700 for c in chapters)
    first = chapters.get(number=1)
    assert first.title == "山门夜雨"
    assert first.opens == ["伏笔-001"]
    assert first.body.startswith("青岚山的雨下了整整三天。")
    assert chapters.get(number=22).perspective == "苏师姐"


def test_demo_book_weak_hook_streak_is_exactly_three(demo):
    _, book = demo
    hooks = dict(Chapter.objects.filter(book=book, number__gte=21).values_list("number", "hook_type"))
    assert hooks == {21: "悬疑钩-中", 22: "情感钩-弱", 23: "期待钩-弱", 24: "悬疑钩-弱"}


def test_demo_book_threads(demo):
    _, book = demo
    threads = {t.thread_id: t for t in Thread.objects.filter(book=book)}
    assert sorted(threads) == [
        "伏笔-001",
        "伏笔-002",
        "伏笔-003",
        "伏笔-004",
        "悬念-001",
        "悬念-002",
        "悬念-003",
        "感情线-001",
        "感情线-002",
        "感情线-003",
    ]
    closed = {tid: t.closed_chapter for tid, t in threads.items() if t.status == "已收尾"}
    assert closed == {"伏笔-002": 14, "悬念-002": 19}
    assert [tid for tid, t in threads.items() if t.status == "已放弃"] == ["感情线-002"]
    high = {tid: t.planned_end for tid, t in threads.items() if t.strength == "高"}
    assert high == {"伏笔-001": 40, "伏笔-003": 36, "悬念-002": 19}
    # The overdue one: 悬念-001 was last advanced in chapter 8 and has hung 16 chapters at chapter 24.
    overdue = threads["悬念-001"]
    assert overdue.status == "进行"
    assert [h.chapter for h in overdue.history.all()] == [5, 8]
    assert [h.chapter for h in threads["伏笔-001"].history.all()] == [1, 3, 11, 20]


def test_demo_book_secret_keywords_and_the_leak(demo):
    _, book = demo
    bodies = dict(Chapter.objects.filter(book=book).values_list("number", "body"))
    hits = {}
    for secret in Secret.objects.filter(book=book):
        for keyword in secret.keywords:
            hits[(secret.secret_id, keyword)] = [n for n, body in sorted(bodies.items()) if keyword in body]
    assert hits == {
        ("信息差-001", "开派祖师"): [20],
        ("信息差-001", "青岚子"): [7, 20],  # chapter 7 is the deliberate leak (reader told in 20)
        ("信息差-002", "幽冥令"): [],
        ("信息差-002", "殿主密令"): [],
        ("信息差-003", "陆家遗孤"): [22],
        ("信息差-004", "鹭门密令"): [],
    }
    told = dict(Secret.objects.filter(book=book).values_list("secret_id", "reader_told_chapter"))
    assert told == {"信息差-001": 20, "信息差-002": None, "信息差-003": 22, "信息差-004": None}
    first = Secret.objects.get(book=book, secret_id="信息差-001")
    assert first.registered_chapter == 3
    assert first.reader_knows is True


def test_demo_book_alias_ambiguity_across_types(demo):
    _, book = demo
    with pytest.raises(Ambiguous) as exc:
        alias_resolve(book=book, alias="白鹭")
    assert sorted(c["canonical_name"] for c in exc.value.extra["candidates"]) == ["白鹭洲", "陆白鹭"]
    assert alias_resolve(book=book, alias="白鹭", type="角色").canonical_name == "陆白鹭"
    assert alias_resolve(book=book, alias="白鹭", type="地点").canonical_name == "白鹭洲"
    with pytest.raises(Ambiguous):
        alias_resolve(book=book, alias="青岚宗")
    assert alias_resolve(book=book, alias="青岚宗", type="势力").entity_id == "faction_qinglanzong"


def test_demo_book_protagonist_alias_window(demo):
    _, book = demo
    linfeng = Entity.objects.get(book=book, canonical_name="林风")
    assert linfeng.is_protagonist is True
    assert linfeng.entity_id == "linfeng"
    assert sorted(Alias.objects.filter(entity=linfeng).values_list("alias", flat=True)) == sorted(
        ["小风", "林师弟", "林小子", "青岚剑子"]
    )
    assert alias_resolve(book=book, alias="青岚剑子", chapter=13) == linfeng
    with pytest.raises(NotFound):
        alias_resolve(book=book, alias="青岚剑子", chapter=12)


def test_demo_book_entity_types(demo):
    _, book = demo
    counts = {t: Entity.objects.filter(book=book, type=t).count() for t in ("角色", "地点", "物品", "势力", "招式")}
    assert counts == {"角色": 8, "地点": 4, "物品": 3, "势力": 3, "招式": 4}


def test_demo_book_workspace_is_never_read(demo):
    _, book = demo
    paths = list(SourceFile.objects.filter(book=book).values_list("path", flat=True))
    assert paths
    assert not [p for p in paths if p.startswith("工作区")]
    assert "README.md" not in paths
