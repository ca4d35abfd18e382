"""The P0 character reads (``character``, ``character-list``): the current state, replayed as
``entity`` replays it, through the selectors, the ``story`` command and REST — on the demo book and
on a synthetic one (bench/gen_book.py) with state tags added."""

import json
import shutil
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from bench.gen_book import chapter_path, generate_book
from bookfiles.rebuilder import book_rebuild
from core.models import Book, TimelineRow, Volume
from entities import selectors
from entities.models import Alias, Entity, StateChange
from kernel.exceptions import NotFound
from tests.conftest import DEMO_BOOK

pytestmark = pytest.mark.django_db


def story(*args: str):
    out = StringIO()
    call_command("story", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def demo(db):
    if not (DEMO_BOOK / "book.yaml").exists():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    report = book_rebuild(root=DEMO_BOOK)
    assert report["ok"], report["errors"]
    return Book.objects.get(slug="demo-book")


LINFENG_NOW = {
    "id": "linfeng",
    "name": "林风",
    "aliases": ["小风", "林小子", "林师弟", "青岚剑子"],
    "tier": "核心",
    "protagonist": True,
    "description": "",
    "source": "角色卡",
    "source_path": "设定/角色/林风.md",
    "as_of": 24,
    "current_chapter": 24,
    # The card says 炼气三层 / 青岚宗: the tags of chapters 4–24 moved him on.
    "state": {
        "status": "存活",
        "location": "雾海",
        "realm": "筑基初期",
        "possessions": ["断剑青岚", "雾海图"],
        "faction": "青岚宗",
        "skills": ["青岚十三式"],
        "spirit_stones": 5,
    },
    "changed_in": {"location": 24, "realm": 20, "possessions": 20, "skills": 11, "spirit_stones": 4},
    "sections": ["外貌", "性格", "来历"],
}


def test_character_answers_the_current_state_on_both_doors(demo, api):
    assert story("character", "demo-book", "林风") == LINFENG_NOW
    assert api.get("/api/books/demo-book/characters/小风").json() == LINFENG_NOW
    # The same state `entity` answers.
    assert selectors.entity_detail(book=demo, ref="linfeng")["state"] == LINFENG_NOW["state"]


def test_character_as_of_a_chapter(demo, api):
    expected = {
        "status": "存活",
        "location": "青岚宗",
        "realm": "炼气五层",
        "possessions": ["断剑青岚", "雾海图"],
        "faction": "青岚宗",
        "skills": ["青岚十三式"],
        "spirit_stones": 5,
    }
    data = story("character", "demo-book", "林风", "--as-of", "12")
    assert (data["as_of"], data["current_chapter"], data["state"]) == (12, 24, expected)
    assert data["changed_in"] == {"realm": 11, "possessions": 9, "skills": 11, "spirit_stones": 4}
    rest = api.get("/api/books/demo-book/characters/林风", {"as_of": 12}).json()
    assert rest == data
    # Chapter 0: the card as written.
    initial = api.get("/api/books/demo-book/characters/林风", {"as_of": 0}).json()
    assert initial["state"]["realm"] == "炼气三层"
    assert initial["state"]["location"] == "青岚宗"
    assert initial["changed_in"] == {}


def test_a_roster_character_without_a_card_is_answered_from_the_roster(demo, api):
    expected = {
        "id": "wangbo",
        "name": "王伯",
        "aliases": ["老王头"],
        "tier": "次要",
        "protagonist": False,
        "description": "外门扫地的跛脚老人，曾是剑冢守墓人。",
        "source": "名册",
        "source_path": "设定/名册.yaml",
        "as_of": 20,
        "current_chapter": 24,
        "state": {"location": "青岚宗", "wound": "幽冥掌旧伤"},
        "changed_in": {"wound": 14},
        "sections": [],
    }
    assert story("character", "demo-book", "老王头", "--as-of", "20") == expected
    assert api.get("/api/books/demo-book/characters/王伯", {"as_of": 20}).json() == expected
    now = api.get("/api/books/demo-book/characters/王伯").json()
    assert (now["as_of"], now["state"], now["changed_in"]) == (24, {"location": "青岚宗"}, {"wound": 23})
    # He has no card to print: the 404 says where he is defined and which read answers him.
    resp = api.get("/api/books/demo-book/characters/王伯/card")
    assert resp.status_code == 404
    assert resp.json()["message"] == "角色 '王伯' 没有角色卡（定义于 设定/名册.yaml；角色信息见 story character）"


def test_character_errors_are_chinese_and_named(demo, api):
    resp = api.get("/api/books/demo-book/characters/林风", {"as_of": -1})
    assert resp.status_code == 422
    assert "as_of" in resp.json()["message"]
    resp = api.get("/api/books/demo-book/characters/无此人")
    assert resp.status_code == 404
    assert resp.json()["message"] == "别名 '无此人' 没有对应的实体"
    with pytest.raises(CommandError, match="无此人"):
        story("character", "demo-book", "无此人")
    # A place is no character.
    assert api.get("/api/books/demo-book/characters/雾海").status_code == 404


def test_character_list_has_each_current_location(demo, api):
    rows = story("character-list", "demo-book")
    assert [(r["id"], r["status"], r["location"]) for r in rows] == [
        ("jianlao", "残魂", "断剑青岚"),
        ("linfeng", "存活", "雾海"),
        ("lubailu", "存活", "白鹭洲"),
        ("shenmo", "存活", "青岚宗"),
        ("suwanqing", "存活", "青岚宗"),
        ("wangbo", None, "青岚宗"),
        ("yunhezhenren", "存活", "青岚宗"),
        ("zhaoqian", "伏诛", None),
        ("zhouhu", None, None),
    ]
    assert api.get("/api/books/demo-book/characters").json() == rows


def test_character_and_entity_agree_on_a_synthetic_book(tmp_path, api):
    root = tmp_path / "book"
    generate_book(root, chapters=30, seed=3, entities=24, aliases=30, threads=6, secrets=2, chars_per_chapter=300)
    rebuilt = book_rebuild(root=root)
    assert rebuilt["ok"], rebuilt["errors"]
    book = Book.objects.get()
    book_slug = book.slug
    characters = selectors.character_list(book=book)
    assert len(characters) >= 5
    # Move every third character in chapter 17 (a tag at the end of the chapter, as an author writes it).
    moved = {c["id"]: f"新地{i}" for i, c in enumerate(characters) if i % 3 == 0}
    path = chapter_path(root, 17)
    tags = "".join(
        f'\n<entity-update id="{cid}" reason="迁居">\n  <set field="location" value="{place}"/>\n</entity-update>'
        for cid, place in moved.items()
    )
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + tags + "\n", encoding="utf-8")
    rebuilt = book_rebuild(root=root)
    assert rebuilt["ok"], rebuilt["errors"]
    listing = {r["id"]: r for r in api.get(f"/api/books/{book_slug}/characters").json()}
    for row in characters:
        cid = row["id"]
        detail = api.get(f"/api/books/{book_slug}/characters/{cid}").json()
        entity = api.get(f"/api/books/{book_slug}/entities/{cid}").json()
        assert detail["state"] == entity["state"], cid
        assert detail["as_of"] == 30
        assert listing[cid]["location"] == entity["state"].get("location")
        if cid in moved:
            assert detail["state"]["location"] == moved[cid]
            assert detail["changed_in"]["location"] == 17
            before = api.get(f"/api/books/{book_slug}/characters/{cid}", {"as_of": 16}).json()
            assert before["state"].get("location") == row["location"] != moved[cid]
    shutil.rmtree(root)


# ── edges the demo book does not reach, on hand-made rows ──


@pytest.fixture
def book(db):
    book = Book.objects.create(slug="b", title="书", root="/tmp/b")
    Volume.objects.create(book=book, number=1, start_chapter=1, end_chapter=2)
    Volume.objects.create(book=book, number=2, start_chapter=3, end_chapter=4)
    return book


def test_character_status_is_the_replayed_current_state(book):
    hero = Entity.objects.create(
        book=book, entity_id="jia", type="角色", canonical_name="甲", base_state={"status": "存活"}
    )
    Entity.objects.create(book=book, entity_id="yi", type="角色", canonical_name="乙", base_state={"status": "存活"})
    StateChange.objects.create(book=book, entity=hero, chapter=5, field="status", op="set", new="死亡")
    assert [(c["id"], c["status"]) for c in selectors.character_list(book=book)] == [("jia", "死亡"), ("yi", "存活")]
    assert [c["id"] for c in selectors.character_list(book=book, status="存活")] == ["yi"]


def test_timeline_character_falls_back_to_the_written_name(book):
    TimelineRow.objects.create(book=book, volume=1, order=0, chapter=1, event="路过", present=["路人丙"])
    assert [r["event"] for r in selectors.timeline_character(book=book, name="路人丙")["rows"]] == ["路过"]
    with pytest.raises(NotFound, match="无名"):
        selectors.timeline_character(book=book, name="无名")


def test_timeline_character_matches_every_alias(book):
    hero = Entity.objects.create(book=book, entity_id="jia", type="角色", canonical_name="甲")
    Alias.objects.create(book=book, entity=hero, alias="阿甲")
    TimelineRow.objects.create(book=book, volume=1, order=0, chapter=1, present=["阿甲", "乙"])
    TimelineRow.objects.create(book=book, volume=2, order=0, chapter=3, present=["乙"])
    TimelineRow.objects.create(book=book, volume=2, order=1, chapter=4, present=["甲"])
    data = selectors.timeline_character(book=book, name="阿甲")
    assert (data["character"], data["names"], [r["chapter"] for r in data["rows"]]) == ("甲", ["甲", "阿甲"], [1, 4])
