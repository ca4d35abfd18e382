"""The demo book (examples/demo-book) rebuilds cleanly and carries the facts its README promises."""

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from bookfiles.rebuilder import book_rebuild
from core.models import ApiKey, Book, Chapter, SourceFile, Volume
from entities.models import Alias, Appearance, Entity, Extraction, PendingItem, RelationshipEvent, StateChange
from entities.selectors import alias_resolve, entity_relationships, entity_state_as_of, tag_issues_list
from kernel.exceptions import Ambiguous, NotFound
from memory.models import Fact
from tests.conftest import DEMO_BOOK
from threads.models import Secret, Thread
from webnovel.demo import demo_extraction_files, demo_extractions_ingest

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
    assert alias_resolve(book=book, alias="青岚剑子", number=13) == linfeng
    with pytest.raises(NotFound):
        alias_resolve(book=book, alias="青岚剑子", number=12)


def test_demo_book_entity_types(demo):
    _, book = demo
    counts = {t: Entity.objects.filter(book=book, type=t).count() for t in ("角色", "地点", "物品", "势力", "招式")}
    # 22 from the files (the rebuild report's count) + 周虎, declared by an <entity> tag in chapter 4
    assert counts == {"角色": 9, "地点": 4, "物品": 3, "势力": 3, "招式": 4}
    zhouhu = Entity.objects.get(book=book, entity_id="zhouhu")
    assert (zhouhu.canonical_name, zhouhu.tier, zhouhu.source) == ("周虎", "装饰", "tag")


def test_demo_book_workspace_is_never_read(demo):
    _, book = demo
    paths = list(SourceFile.objects.filter(book=book).values_list("path", flat=True))
    assert paths
    assert not [p for p in paths if p.startswith("工作区")]
    assert "README.md" not in paths


# --- manage.py demo_setup ------------------------------------------------------------------------


def demo_setup(*args) -> str:
    out = StringIO()
    call_command("demo_setup", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def no_admin_env(monkeypatch):
    monkeypatch.delenv("WEBNOVEL_ADMIN_USER", raising=False)
    monkeypatch.delenv("WEBNOVEL_ADMIN_PASSWORD", raising=False)


def test_demo_setup_first_run(client, no_admin_env):
    result = json.loads(demo_setup("--json"))
    assert result["book"] == "demo-book"
    assert result["counts"]["chapters"] == 24
    assert result["warnings"] == 0
    assert result["urls"] == {
        "admin": "http://127.0.0.1:8000/admin/",
        "api_docs": "http://127.0.0.1:8000/api/docs",
        "dashboard": "http://127.0.0.1:8000/dashboard/",
    }
    admin = result["admin"]
    assert (admin["username"], admin["created"]) == ("admin", True)
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.is_staff
    assert user.check_password(admin["password"])
    key = ApiKey.objects.get(revoked=False)
    assert (key.scope, key.book.slug, key.prefix) == ("write", "demo-book", result["api_key"]["prefix"])
    assert client.get("/api/books/", HTTP_X_API_KEY=result["api_key"]["key"]).status_code == 200


def test_demo_setup_is_idempotent(no_admin_env):
    first = json.loads(demo_setup("--json"))
    second = json.loads(demo_setup("--json"))
    assert second["admin"] == {"username": "admin", "created": False, "password": None}
    assert get_user_model().objects.get(username="admin").check_password(first["admin"]["password"])
    assert get_user_model().objects.count() == 1
    assert Book.objects.filter(slug="demo-book").count() == 1
    live = ApiKey.objects.filter(revoked=False)
    assert [k.prefix for k in live] == [second["api_key"]["prefix"]]
    assert ApiKey.objects.filter(revoked=True).count() == 1


def test_demo_setup_admin_from_environment(monkeypatch):
    monkeypatch.setenv("WEBNOVEL_ADMIN_USER", "boss")
    monkeypatch.setenv("WEBNOVEL_ADMIN_PASSWORD", "first-secret")
    text = demo_setup("--no-key")
    assert "已创建管理员 boss（密码取自 WEBNOVEL_ADMIN_PASSWORD）" in text
    assert "first-secret" not in text
    assert get_user_model().objects.get(username="boss").check_password("first-secret")
    monkeypatch.setenv("WEBNOVEL_ADMIN_PASSWORD", "second-secret")
    assert "管理员 boss 已存在，密码已按 WEBNOVEL_ADMIN_PASSWORD 更新" in demo_setup("--no-key")
    assert get_user_model().objects.get(username="boss").check_password("second-secret")
    assert ApiKey.objects.count() == 0


def test_demo_setup_text_output(no_admin_env):
    lines = demo_setup().strip().split("\n")
    assert lines[0] == "演示书 demo-book《青岚剑录》已重建：24 章，10 条线索，23 个实体，警告 0 条"
    assert lines[1] == "示例抽取已导入：第3、6、8章，抽取警告 1 条，待确认 2 项"
    assert lines[2].startswith("已创建管理员 admin，密码（只显示这一次）：")
    assert lines[3].startswith("演示 API 密钥（读写，仅限 demo-book）：wn_")
    assert lines[4:] == [
        "管理后台  http://127.0.0.1:8000/admin/",
        "API 文档  http://127.0.0.1:8000/api/docs",
        "仪表盘    http://127.0.0.1:8000/dashboard/",
    ]
    assert demo_setup().strip().split("\n")[2] == "管理员 admin 已存在，密码未改动"


def test_demo_setup_fails_cleanly_on_a_broken_book(tmp_path, monkeypatch, no_admin_env):
    from webnovel.management.commands import demo_setup as command

    broken = tmp_path / "demo-book"
    (broken / "定稿" / "正文").mkdir(parents=True)
    (broken / "book.yaml").write_text("title: [坏\n", encoding="utf-8")
    monkeypatch.setattr(command, "DEMO_SOURCE", broken)
    monkeypatch.setattr(command, "DEMO_BOOK", tmp_path / "copy")
    with pytest.raises(CommandError, match="演示书重建失败"):
        demo_setup()
    assert get_user_model().objects.count() == 0


# --- entities over time: manual tags in the chapters + the sample extractions ------------------


@pytest.fixture
def demo_ingested(demo):
    _, book = demo
    demo_extractions_ingest(book=book)
    return book


def _state(book: Book, entity_id: str, chapter: int | None) -> dict:
    return entity_state_as_of(entity=Entity.objects.get(book=book, entity_id=entity_id), number=chapter)


def test_demo_book_tags_apply_without_issues(demo):
    _, book = demo
    assert tag_issues_list(book=book) == []
    tagged = Chapter.objects.filter(book=book).exclude(entity_tags=[])
    assert list(tagged.values_list("number", flat=True)) == [4, 9, 11, 14, 19, 20, 21, 23, 24]
    # tags never reach the prose: chapter 20 still ends on 剑老's words
    assert Chapter.objects.get(book=book, number=20).body.endswith("等的就是你。”\n")


def test_demo_book_protagonist_state_as_of(demo_ingested):
    book = demo_ingested
    base = {"status": "存活", "faction": "青岚宗", "spirit_stones": 5}
    # chapter 10: 炼气三层 (the card), 听雨诀 (extraction, chapter 3), the half map (tag, chapter 9)
    assert _state(book, "linfeng", 10) == {
        **base,
        "location": "青岚宗",
        "realm": "炼气三层",
        "possessions": ["断剑青岚", "雾海图"],
        "skills": ["听雨诀"],
    }
    # chapter 14: 炼气五层 since 11, 王伯's copper key
    assert _state(book, "linfeng", 14) == {
        **base,
        "location": "青岚宗",
        "realm": "炼气五层",
        "possessions": ["断剑青岚", "雾海图", "铜钥匙"],
        "skills": ["听雨诀", "青岚十三式"],
    }
    # chapter 20 (key chapter): 筑基初期 in the 剑冢, the key used
    assert _state(book, "linfeng", 20) == {
        **base,
        "location": "剑冢",
        "realm": "筑基初期",
        "possessions": ["断剑青岚", "雾海图"],
        "skills": ["听雨诀", "青岚十三式"],
    }
    assert _state(book, "linfeng", 21)["location"] == "青岚宗"
    assert _state(book, "linfeng", None) == {**_state(book, "linfeng", 20), "location": "雾海"}
    assert _state(book, "linfeng", 3)["realm"] == "炼气三层"
    assert "spirit_stones" not in _state(book, "linfeng", 3)


def test_demo_book_other_characters_change(demo_ingested):
    book = demo_ingested
    assert "wound" not in _state(book, "wangbo", 13)
    assert _state(book, "wangbo", 14) == {"location": "青岚宗", "wound": "幽冥掌旧伤"}
    assert _state(book, "wangbo", 23) == {"location": "青岚宗"}
    assert _state(book, "zhaoqian", 18) == {}
    assert _state(book, "zhaoqian", 19) == {"status": "伏诛"}
    assert _state(book, "shenmo", 19)["possessions"] == ["护心丹"]
    # the 0.7 change of chapter 6 is adopted (with a warning); the 0.35 one of chapter 8 is held
    assert _state(book, "suwanqing", 6)["attitude"] == "对林风生出好感"
    assert _state(book, "shenmo", None)["faction"] == "青岚宗"
    warnings = dict(Extraction.objects.filter(book=book).values_list("chapter", "warnings"))
    assert [(n, [w["confidence"] for w in ws]) for n, ws in sorted(warnings.items())] == [(3, []), (6, [0.7]), (8, [])]


def test_demo_book_alias_from_a_tag_has_a_window(demo):
    _, book = demo
    jianlao = Entity.objects.get(book=book, entity_id="jianlao")
    assert alias_resolve(book=book, alias="青岚子", number=20) == jianlao
    with pytest.raises(NotFound):
        alias_resolve(book=book, alias="青岚子", number=19)


def test_demo_book_relationships(demo_ingested):
    book = demo_ingested
    rows = [
        (r["from"], r["type"], r["to"], r["chapter"], r["description"])
        for r in entity_relationships(book=book, ref="linfeng")["relationships"]
    ]
    assert rows == [
        ("jianlao", "师徒", "linfeng", 3, "剑老传林风听雨诀，收他为徒"),
        ("suwanqing", "同门", "linfeng", 6, "藏经阁外替外门师弟林风解围"),
        ("shenmo", "敌对", "linfeng", 8, "剑冢外拦下林风，以门规相胁并警告他别接近苏晚晴"),
    ]
    as_of_7 = entity_relationships(book=book, ref="linfeng", as_of=7)["relationships"]
    assert [r["type"] for r in as_of_7] == ["师徒", "同门"]


def test_demo_book_pending_items(demo_ingested):
    book = demo_ingested
    pending = PendingItem.objects.filter(book=book, status=PendingItem.Status.PENDING).order_by("chapter")
    assert [(p.chapter, p.kind, p.confidence) for p in pending] == [(6, "uncertain", 0.4), (8, "state_change", 0.35)]
    assert pending[0].payload["mention"] == "半张鬼脸"


def test_demo_extraction_files():
    assert [n for n, _ in demo_extraction_files()] == [3, 6, 8]


def _entity_rows(book: Book) -> dict:
    """Everything the ingestion writes, without primary keys (re-ingesting replaces rows)."""
    return {
        "entities": sorted(Entity.objects.filter(book=book).values_list("entity_id", "first_appearance")),
        "aliases": sorted(Alias.objects.filter(entity__book=book).values_list("entity__entity_id", "alias")),
        "changes": sorted(
            StateChange.objects.filter(entity__book=book).values_list(
                "entity__entity_id", "chapter", "seq", "field", "op", "new", "confidence", "source"
            ),
            key=str,
        ),
        "events": sorted(
            RelationshipEvent.objects.filter(relationship__book=book).values_list(
                "relationship__type", "chapter", "description", "source"
            )
        ),
        "appearances": sorted(
            Appearance.objects.filter(entity__book=book).values_list("entity__entity_id", "chapter", "source", "count")
        ),
        "pending": sorted(PendingItem.objects.filter(book=book).values_list("chapter", "kind", "status")),
        "extractions": sorted(Extraction.objects.filter(book=book).values_list("chapter", "warnings")),
    }


def test_demo_setup_ingests_the_sample_extractions(no_admin_env):
    result = json.loads(demo_setup("--json", "--no-key"))
    assert result["extractions"] == {"chapters": [3, 6, 8], "warnings": 1, "pending": 2}
    book = Book.objects.get(slug="demo-book")
    assert _state(book, "linfeng", 20)["realm"] == "筑基初期"
    assert [r["type"] for r in entity_relationships(book=book, ref="linfeng")["relationships"]] == [
        "师徒",
        "同门",
        "敌对",
    ]


def test_demo_setup_twice_changes_no_entity_data(no_admin_env, django_capture_on_commit_callbacks):
    # the after-chapter hooks (memory) run on commit: run them, their facts must not change either
    with django_capture_on_commit_callbacks(execute=True):
        demo_setup("--no-key")
    book = Book.objects.get(slug="demo-book")
    before = _entity_rows(book)
    facts = sorted(Fact.objects.filter(book=book).values_list("category", "key", "status"))
    assert len(before["pending"]) == 2
    assert facts
    with django_capture_on_commit_callbacks(execute=True):
        text = demo_setup("--no-key")
    assert text.split("\n")[1] == "示例抽取已导入：第3、6、8章，抽取警告 1 条，待确认 2 项"
    assert _entity_rows(book) == before
    assert sorted(Fact.objects.filter(book=book).values_list("category", "key", "status")) == facts
