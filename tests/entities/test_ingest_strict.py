"""Issue 19, items 14 and the low ones: a mistyped extraction (``entity_appeared``, ``state_change``)
answered 200, adopted nothing and replaced the chapter's previous extraction; ids like
``../../etc/passwd`` and out-of-range numbers got in. Each is now a 422 naming the JSON path, and
nothing already stored changes."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from entities.models import Appearance, Entity, Extraction, StateChange
from entities.payload import extraction_validate
from entities.services.ingest import extraction_ingest, extraction_parse
from kernel.exceptions import InvalidInput
from tests.conftest import REPO
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.django_db

GOOD = {
    "entities_appeared": [{"id": "linfeng", "mentions": ["林风", "林风"], "confidence": 0.95}],
    "state_changes": [{"entity_id": "linfeng", "field": "realm", "new": "炼气四层", "confidence": 0.9}],
}
TYPO = {
    "entity_appeared": [{"id": "linfeng", "mentions": ["林风"], "confidence": 0.95}],
    "state_change": [{"entity_id": "linfeng", "field": "realm", "new": "筑基", "confidence": 0.9}],
}
ALLOWED_TOP = "entities_appeared、entities_new、state_changes、relationships_new、uncertain、scenes、chapter_meta"


@pytest.fixture
def book():
    book = book_row_make(chapters=5)
    entity_make(book, "linfeng", "林风", base_state={"realm": "炼气三层"})
    extraction_ingest(book=book, number=3, payload=GOOD)
    return book


def _unchanged(book) -> None:
    assert Extraction.objects.get(book=book, chapter=3).payload == GOOD
    assert list(StateChange.objects.filter(book=book, chapter=3).values_list("field", "new")) == [("realm", "炼气四层")]
    assert list(Appearance.objects.filter(book=book, chapter=3).values_list("count", flat=True)) == [2]


def test_singular_top_level_keys_are_a_422_and_replace_nothing(book, api):
    answer = api.post(
        "/api/books/qinglan/chapters/3/extraction", data=json.dumps(TYPO), content_type="application/json"
    )
    assert answer.status_code == 422
    body = answer.json()
    assert body["message"] == (
        f"抽取 JSON 有未知字段：entity_appeared、state_change（entity_appeared 所在对象可用的字段：{ALLOWED_TOP}）；"
        "未做任何改动"
    )
    assert [e["field"] for e in body["extra"]["errors"]] == ["entity_appeared", "state_change"]
    assert body["extra"]["errors"][0]["allowed"] == ALLOWED_TOP.split("、")
    _unchanged(book)


def test_cli_ingest_refuses_the_typo_too(book, tmp_path):
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(TYPO, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(CommandError, match="抽取 JSON 有未知字段：entity_appeared、state_change"):
        call_command("ingest", "qinglan", "3", str(path))
    _unchanged(book)


def test_an_unknown_key_inside_an_item_names_its_path(book):
    payload = {
        "state_changes": [
            {"entity_id": "linfeng", "field": "realm", "new": "炼气五层"},
            {"entity_id": "linfeng", "field": "location", "new": "外门"},
            {"entity_id": "linfeng", "field": "realm", "opp": "set", "new": "炼气六层"},
        ],
        "entities_new": [{"name": "赵元", "type": "角色", "aliases": [{"alias": "赵师兄", "form": 4}]}],
    }
    with pytest.raises(InvalidInput) as exc:
        extraction_ingest(book=book, number=3, payload=payload)
    assert [(e["field"], e["allowed"]) for e in exc.value.extra["errors"]] == [
        ("entities_new[0].aliases[0].form", ["alias", "from", "to", "note", "generic"]),
        ("state_changes[2].opp", ["entity_id", "field", "op", "old", "new", "reason", "confidence"]),
    ]
    assert "state_changes[2].opp" in exc.value.message
    _unchanged(book)


@pytest.mark.parametrize(
    "payload, message",
    [
        (
            {"entities_new": [{"suggested_id": "../../etc/passwd", "name": "赵元", "type": "角色"}]},
            "抽取 JSON 字段无效：entities_new[0].suggested_id 实体 id 无效：'../../etc/passwd'",
        ),
        (
            {"entities_new": [{"suggested_id": "Zhao Yuan", "name": "赵元", "type": "角色"}]},
            "抽取 JSON 字段无效：entities_new[0].suggested_id 实体 id 无效：'Zhao Yuan'",
        ),
        (
            {"entities_new": [{"suggested_id": "a" * 101, "name": "赵元", "type": "角色"}]},
            "抽取 JSON 字段无效：entities_new[0].suggested_id 实体 id 无效",
        ),
        (
            {"entities_new": [{"name": "赵元", "type": "角色", "aliases": [{"alias": "赵执事", "from": -5}]}]},
            "抽取 JSON 字段无效：entities_new[0].aliases[0].from 应 ≥ 1；未做任何改动",
        ),
        (
            {"entities_new": [{"name": "赵元", "type": "角色", "aliases": [{"alias": "赵执事", "to": 10_000_001}]}]},
            "抽取 JSON 字段无效：entities_new[0].aliases[0].to 应 ≤ 10000000；未做任何改动",
        ),
        (
            {"scenes": [{"index": 1, "start_line": 0}]},
            "抽取 JSON 字段无效：scenes[0].start_line 应 ≥ 1；未做任何改动",
        ),
        (
            {"state_changes": [{"entity_id": "linfeng", "field": "realm", "new": "x", "confidence": 1.5}]},
            "抽取 JSON 字段无效：state_changes[0].confidence 应 ≤ 1.0；未做任何改动",
        ),
    ],
)
def test_ids_and_numbers_are_checked_at_the_boundary(book, payload, message):
    with pytest.raises(InvalidInput) as exc:
        extraction_ingest(book=book, number=3, payload=payload)
    assert exc.value.message.startswith(message)
    assert not Entity.objects.filter(canonical_name="赵元").exists()
    _unchanged(book)


@pytest.mark.parametrize(
    "raw", ['{"scenes": NaN}', '{"state_changes": [{"confidence": Infinity}]}', '{"a": -Infinity}']
)
def test_nan_and_infinity_are_not_json(book, api, raw):
    answer = api.post("/api/books/qinglan/chapters/3/extraction", data=raw, content_type="application/json")
    assert answer.status_code == 422
    message = answer.json()["message"]
    assert message.startswith("抽取 JSON 无效：请求体不是合法的 JSON：") and "不是 JSON 数值（位置 body." in message
    _unchanged(book)


def test_a_5000_digit_integer_is_a_422():
    with pytest.raises(InvalidInput, match="抽取 JSON 无效"):
        extraction_parse(raw='{"scenes": [{"index": ' + "9" * 5000 + "}]}")


def test_the_demo_extractions_stay_valid(book):
    files = sorted((REPO / "examples" / "demo-extractions").glob("*.json"))
    assert len(files) == 3
    for path in files:
        extraction_validate(extraction_parse(raw=Path(path).read_bytes()))


@pytest.mark.parametrize("chapter", [0, -5, 10_000_001, 9223372036854775808])
def test_the_chapter_number_is_range_checked_cli_too(book, tmp_path, chapter):
    path = tmp_path / "good.json"
    path.write_text(json.dumps(GOOD), encoding="utf-8")
    with pytest.raises(CommandError, match=f"章节号应在 1 到 10000000 之间，收到 {chapter}"):
        call_command("ingest", "qinglan", str(chapter), str(path))
    _unchanged(book)
