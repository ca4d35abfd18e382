"""Place and faction hierarchies (entities/hierarchy.py): ``parent:`` in the roster and from extractions,
validated (unknown, wrong type, cycle), written through the rebuild so live == rebuild, and the three reads
(ancestors, descendants, within) the same through the interface, REST and the CLI; the demo's chains."""

import json

import pytest
from django.core.management import call_command
from django.test import Client

from bookfiles.rebuilder import book_dump, book_rebuild, book_sync
from core.models import Book
from core.services import apikey_create
from entities.hierarchy import entity_ancestors, entity_descendants, entity_within
from entities.models import Entity
from entities.services.ingest import extraction_ingest
from tests.conftest import DEMO_BOOK
from tests.factories import ROSTER, book_folder_make, book_write

pytestmark = pytest.mark.django_db

CHAIN = """\
地点:
  - name: 东域
  - name: 青州
    parent: 东域
  - name: 青岚宗
    aliases: [青岚山]
    parent: 青州
  - name: 剑冢
    parent: 青岚山        # by an alias
  - name: 甲地
    parent: 乙地
  - name: 乙地
    parent: 甲地          # a cycle
  - name: 孤岛
    parent: 无此地        # unknown
势力:
  - name: 青岚宗
    parent: 东域          # a place, not a faction
  - name: 外门
    parent: 青岚宗
角色:
  - name: 王伯
    parent: 青岚宗        # a character has no parent
"""


def _book(tmp_path, roster=CHAIN) -> Book:
    root = book_folder_make(tmp_path / "mini", {"设定/名册.yaml": roster})
    report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    _book.warnings = [(w["code"], w["message"]) for w in report["warnings"] if "parent" in w["code"]]
    return Book.objects.get(slug="mini")


def test_the_roster_s_parents_are_written_and_bad_ones_named(tmp_path):
    book = _book(tmp_path)
    parents = dict(
        Entity.objects.filter(book=book, type="地点").values_list("canonical_name", "parent__canonical_name")
    )
    assert parents == {
        "东域": None,
        "青州": "东域",
        "青岚宗": "青州",
        "剑冢": "青岚宗",
        "甲地": None,
        "乙地": None,
        "孤岛": None,
    }
    assert Entity.objects.get(book=book, type="势力", canonical_name="外门").parent.type == "势力"
    assert _book.warnings == [
        (
            "unknown_parent",
            "孤岛 的 parent「无此地」不存在（须为设定文件中同类型（地点）实体的名称、别名或 id），未设上级",
        ),
        (
            "unknown_parent",
            "青岚宗 的 parent「东域」不存在（须为设定文件中同类型（势力）实体的名称、别名或 id），未设上级",
        ),
        ("invalid_parent", "王伯 是角色：只有地点、势力可以有 parent"),
        ("parent_cycle", "上级关系成环：甲地 > 乙地 > 甲地；环上各实体均未设上级"),
    ]


def test_the_reads_walk_the_chain_both_ways(tmp_path):
    book = _book(tmp_path)
    up = entity_ancestors(book=book, ref="剑冢")
    assert [a["name"] for a in up["ancestors"]] == ["青岚宗", "青州", "东域"]
    assert up["chain"] == "东域 > 青州 > 青岚宗 > 剑冢"
    down = entity_descendants(book=book, ref="东域")
    assert [(d["name"], d["depth"]) for d in down["descendants"]] == [("青州", 1), ("青岚宗", 2), ("剑冢", 3)]
    inside = entity_within(book=book, ref="剑冢", container="青州", type="地点")
    assert (inside["within"], inside["path"]) == (True, "青州 > 青岚宗 > 剑冢")
    assert entity_within(book=book, ref="青州", container="剑冢", type="地点")["within"] is False


def test_rest_and_cli_give_the_same_answer(tmp_path, capsys):
    _book(tmp_path)
    raw = apikey_create(name="r", scope="read")[1]
    rest = Client(HTTP_X_API_KEY=raw).get("/api/books/mini/entities/剑冢/within/东域?type=地点")
    assert rest.status_code == 200
    call_command("story", "entity-within", "mini", "剑冢", "东域", "--type", "地点")
    assert json.loads(capsys.readouterr().out) == rest.json()
    assert rest.json()["path"] == "东域 > 青州 > 青岚宗 > 剑冢"
    call_command("story", "entity-ancestors", "mini", "外门", "--type", "势力")
    assert json.loads(capsys.readouterr().out)["chain"] == "青岚宗 > 外门"


def test_a_sync_that_moves_a_parent_equals_a_rebuild(tmp_path):
    book = _book(tmp_path)
    root = tmp_path / "mini"
    book_write(root, "设定/名册.yaml", CHAIN.replace("    parent: 青岚山        # by an alias", "    parent: 东域"))
    assert book_sync(book=book)["ok"]
    live = book_dump(book=book)
    assert Entity.objects.get(book=book, canonical_name="剑冢").parent.canonical_name == "东域"
    Book.objects.all().delete()
    assert book_rebuild(root=root)["ok"]
    assert book_dump(book=Book.objects.get(slug="mini")) == live


def test_an_extraction_gives_its_new_place_a_parent(tmp_path):
    book = _book(tmp_path, roster=ROSTER)
    new = {
        "entities_new": [
            {"name": "藏经阁", "type": "地点", "parent": "青岚山", "confidence": 0.9},
            {"name": "后山", "type": "地点", "parent": "无名谷", "confidence": 0.9},
        ]
    }
    report = extraction_ingest(book=book, number=1, payload=new)
    assert Entity.objects.get(book=book, canonical_name="藏经阁").parent.canonical_name == "青岚宗"
    assert Entity.objects.get(book=book, canonical_name="后山").parent is None
    assert [w["field"] for w in report["warnings"]] == ["entities_new[1].parent"]
    assert "无名谷" in report["warnings"][0]["message"]
    assert entity_ancestors(book=book, ref="藏经阁")["chain"] == "青岚宗 > 藏经阁"


def test_the_demo_has_its_place_chains():
    assert book_rebuild(root=DEMO_BOOK)["ok"]
    demo_book = Book.objects.get(slug="demo-book")
    assert entity_ancestors(book=demo_book, ref="白鹭洲", type="地点")["chain"] == "雾海 > 白鹭洲"
    assert [d["name"] for d in entity_descendants(book=demo_book, ref="青岚宗", type="地点")["descendants"]] == ["剑冢"]
    assert entity_within(book=demo_book, ref="剑冢", container="青岚山")["within"] is True


def test_the_dashboard_entity_page_shows_the_chain(client):
    from tests.factories import user_make

    assert book_rebuild(root=DEMO_BOOK)["ok"]
    client.force_login(user_make())
    place = Entity.objects.get(book__slug="demo-book", type="地点", canonical_name="白鹭洲")
    sea = Entity.objects.get(book__slug="demo-book", type="地点", canonical_name="雾海")
    html = client.get(f"/dashboard/demo-book/entities/{place.entity_id}/").content.decode()
    assert f'<a href="/dashboard/demo-book/entities/{sea.entity_id}/">雾海</a> &gt; <strong>白鹭洲</strong>' in html
    html = client.get(f"/dashboard/demo-book/entities/{sea.entity_id}/").content.decode()
    assert f'<a href="/dashboard/demo-book/entities/{place.entity_id}/">白鹭洲</a></li>' in html
    person = Entity.objects.get(book__slug="demo-book", canonical_name="林风")
    assert "<h2>层级</h2>" not in client.get(f"/dashboard/demo-book/entities/{person.entity_id}/").content.decode()


def test_the_context_pack_names_the_place_s_chain():
    from memory.orchestrator import build_memory_pack, pack_text

    assert book_rebuild(root=DEMO_BOOK)["ok"]
    book = Book.objects.get(slug="demo-book")
    text = pack_text(build_memory_pack(book=book, number=16, task="write", budget_tokens=8000))
    lu = next(line for line in text.split("\n") if line.startswith("【在场角色·陆白鹭"))
    body = text.split(lu, 1)[1].split("\n", 2)[1]
    assert "位置：雾海 > 白鹭洲" in body
