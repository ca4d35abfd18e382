import pytest

from entities.models import Appearance, Entity, Extraction, PendingItem, Relationship, StateChange
from entities.selectors import entity_state_as_of, pending_list, relationship_graph
from entities.services.ingest import extraction_ingest
from entities.services.pending import pending_item_confirm, pending_item_reject
from kernel.exceptions import Conflict, InvalidInput, NotFound
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def book():
    book = book_row_make(chapters=10)
    entity_make(book, "linfeng", "林风", aliases=["小风"], tier="核心", base_state={"realm": "炼气三层"})
    entity_make(book, "jianlao", "剑老", aliases=["老者"])
    entity_make(book, "loc_qinglanzong", "青岚宗", type="地点")
    return book


def _payload(**overrides):
    payload = {
        "entities_appeared": [
            {"id": "linfeng", "type": "角色", "mentions": ["林风", "小风", "林风"], "confidence": 0.95},
            {"id": "老者", "mentions": ["老者"], "confidence": 0.7},
        ],
        "entities_new": [
            {
                "suggested_id": "zhaoyuan",
                "name": "赵元",
                "type": "角色",
                "tier": "次要",
                "desc": "外门弟子",
                "aliases": ["赵师兄"],
                "confidence": 0.9,
            },
            {"suggested_id": "heiyiren", "name": "黑衣人", "type": "角色", "confidence": 0.3},
        ],
        "state_changes": [
            {
                "entity_id": "linfeng",
                "field": "realm",
                "old": "炼气三层",
                "new": "炼气四层",
                "reason": "突破",
                "confidence": 0.9,
            },
            {"entity_id": "小风", "field": "location", "new": "青岚宗", "reason": "入门", "confidence": 0.6},
            {"entity_id": "linfeng", "field": "hp", "op": "inc", "new": -5, "confidence": 0.4},
        ],
        "relationships_new": [
            {"from": "zhaoyuan", "to": "linfeng", "type": "师兄", "description": "赵元是林风的师兄"},
        ],
        "uncertain": [{"mention": "那人", "candidates": ["jianlao", "heiyiren"], "confidence": 0.4, "adopted": None}],
        "scenes": [
            {
                "index": 1,
                "start_line": 1,
                "end_line": 20,
                "location": "青岚宗",
                "summary": "入门",
                "characters": ["林风"],
            }
        ],
        "chapter_meta": {"hook": "危机钩"},
    }
    payload.update(overrides)
    return payload


def test_ingest_adopts_warns_and_holds_by_confidence(book):
    result = extraction_ingest(book=book, number=3, payload=_payload())

    assert result["adopted"] == {
        "entities_new": 1,
        "entities_appeared": 2,
        "state_changes": 2,
        "relationships_new": 1,
        "uncertain": 0,
    }
    assert result["pending"] == 3  # 黑衣人, the hp inc, the uncertain mention
    assert result["created_entities"] == ["zhaoyuan"]
    assert [w["field"] for w in result["warnings"]] == ["entities_appeared[1]", "state_changes[1]"]
    lin = Entity.objects.get(book=book, entity_id="linfeng")
    assert entity_state_as_of(entity=lin, number=2) == {"realm": "炼气三层"}
    assert entity_state_as_of(entity=lin, number=3) == {"realm": "炼气四层", "location": "青岚宗"}
    assert Appearance.objects.get(entity=lin, chapter=3, source="extraction").aliases == {"林风": 2, "小风": 1}
    zhao = Entity.objects.get(book=book, entity_id="zhaoyuan")
    assert (zhao.first_appearance, zhao.source, sorted(zhao.aliases.values_list("alias", flat=True))) == (
        3,
        "extraction",
        ["赵师兄"],
    )
    rel = Relationship.objects.get(book=book)
    assert (rel.from_entity.entity_id, rel.type, rel.to_entity.entity_id, rel.chapter) == (
        "zhaoyuan",
        "师兄",
        "linfeng",
        3,
    )
    queue = pending_list(book=book)
    assert [(p["kind"], p["confidence"]) for p in queue] == [
        ("entity_new", 0.3),
        ("state_change", 0.4),
        ("uncertain", 0.4),
    ]
    extraction = Extraction.objects.get(book=book, chapter=3)
    assert extraction.chapter_meta == {"hook": "危机钩"} and extraction.scenes[0]["location"] == "青岚宗"


def test_reingest_replaces_the_chapter_and_replay_stays_right(book):
    extraction_ingest(book=book, number=3, payload=_payload())
    extraction_ingest(
        book=book,
        number=5,
        payload={"state_changes": [{"entity_id": "linfeng", "field": "realm", "new": "炼气五层", "confidence": 0.99}]},
    )
    second = extraction_ingest(
        book=book,
        number=3,
        payload=_payload(
            entities_new=[],
            relationships_new=[],
            state_changes=[{"entity_id": "linfeng", "field": "realm", "new": "筑基", "confidence": 0.9}],
        ),
    )
    assert second["replaced"] is True
    lin = Entity.objects.get(book=book, entity_id="linfeng")
    assert entity_state_as_of(entity=lin, number=3) == {"realm": "筑基"}
    assert entity_state_as_of(entity=lin, number=None) == {"realm": "炼气五层"}
    assert StateChange.objects.filter(book=book, chapter=3).count() == 1
    assert not Entity.objects.filter(book=book, entity_id="zhaoyuan").exists()  # orphan of the first ingest
    assert Relationship.objects.filter(book=book).count() == 0
    # Re-ingesting the identical payload twice gives the same rows (idempotent).
    extraction_ingest(book=book, number=3, payload=_payload())
    snapshot = sorted(StateChange.objects.filter(book=book).values_list("chapter", "field", "new"))
    extraction_ingest(book=book, number=3, payload=_payload())
    assert sorted(StateChange.objects.filter(book=book).values_list("chapter", "field", "new")) == snapshot
    assert PendingItem.objects.filter(book=book, status="pending").count() == 3


def test_unknown_reference_is_422_naming_the_field_and_nothing_is_written(book):
    payload = _payload()
    payload["state_changes"].append({"entity_id": "nobody", "field": "realm", "new": "x"})
    with pytest.raises(InvalidInput) as exc:
        extraction_ingest(book=book, number=3, payload=payload)
    assert exc.value.message == "state_changes[3].entity_id: 未知实体 'nobody'"
    assert not Entity.objects.filter(entity_id="zhaoyuan").exists()
    assert StateChange.objects.count() == 0 and not Extraction.objects.exists()


def test_schema_error_names_the_field(book):
    with pytest.raises(InvalidInput) as exc:
        extraction_ingest(
            book=book, number=3, payload={"state_changes": [{"entity_id": "linfeng", "new": 1, "confidence": 2}]}
        )
    assert exc.value.message == (
        "抽取 JSON 字段无效：state_changes[0].field 缺少此字段；state_changes[0].confidence 应 ≤ 1.0；未做任何改动"
    )


def test_missing_chapter_is_404(book):
    with pytest.raises(NotFound) as exc:
        extraction_ingest(book=book, number=99, payload={})
    assert exc.value.message == "第99章不存在（《青岚剑录》）"


def test_confirm_pending_new_entity_applies_the_held_write(book):
    extraction_ingest(book=book, number=3, payload=_payload())
    held = PendingItem.objects.get(kind="entity_new")
    assert pending_item_confirm(item=held) == {"pk": held.pk, "kind": "entity_new", "entity": "heiyiren"}
    hei = Entity.objects.get(book=book, entity_id="heiyiren")
    assert (hei.canonical_name, hei.first_appearance, hei.source) == ("黑衣人", 3, "curation")

    # Confirm the uncertain mention by picking 黑衣人; it becomes an appearance in chapter 3.
    uncertain = PendingItem.objects.get(kind="uncertain")
    pending_item_confirm(item=uncertain, entity=hei)
    assert Appearance.objects.get(entity=hei, chapter=3).source == "curation"

    # The held inc is applied as a curated change.
    inc = PendingItem.objects.get(kind="state_change")
    pending_item_confirm(item=inc)
    lin = Entity.objects.get(entity_id="linfeng")
    assert entity_state_as_of(entity=lin, number=3)["hp"] == -5
    assert pending_list(book=book) == []

    # A re-ingest does not re-queue decided items and keeps the curated rows.
    extraction_ingest(book=book, number=3, payload=_payload())
    assert pending_list(book=book) == []
    assert entity_state_as_of(entity=lin, number=3)["hp"] == -5
    with pytest.raises(Conflict, match="已处理（已确认）"):
        pending_item_reject(item=inc)


def test_confirm_new_entity_by_picking_an_existing_one_makes_it_an_alias(book):
    extraction_ingest(book=book, number=3, payload=_payload())
    held = PendingItem.objects.get(kind="entity_new")
    pending_item_confirm(item=held, entity=Entity.objects.get(entity_id="jianlao"))
    assert sorted(Entity.objects.get(entity_id="jianlao").aliases.values_list("alias", flat=True)) == ["老者", "黑衣人"]
    assert not Entity.objects.filter(entity_id="heiyiren").exists()


def test_relationship_graph_as_of_and_mermaid(book):
    extraction_ingest(
        book=book, number=3, payload=_payload(state_changes=[], entities_new=_payload()["entities_new"][:1])
    )
    extraction_ingest(
        book=book,
        number=6,
        payload={
            "relationships_new": [{"from": "jianlao", "to": "linfeng", "type": "师徒", "description": "剑老收徒"}]
        },
    )
    graph = relationship_graph(book=book, ref="林风", depth=1, as_of=4)
    assert [n["id"] for n in graph["nodes"]] == ["linfeng", "zhaoyuan"]
    assert graph["edges"] == [
        {
            "from": "zhaoyuan",
            "to": "linfeng",
            "type": "师兄",
            "description": "赵元是林风的师兄",
            "chapter": 3,
            "last_chapter": 3,
        }
    ]
    now = relationship_graph(book=book, ref="linfeng", depth=1, as_of=None)
    assert [n["id"] for n in now["nodes"]] == ["linfeng", "jianlao", "zhaoyuan"]
    assert now["mermaid"].splitlines() == [
        "graph LR",
        '  n_linfeng["林风"]',
        '  n_jianlao["剑老"]',
        '  n_zhaoyuan["赵元"]',
        '  n_zhaoyuan -->|"师兄"| n_linfeng',
        '  n_jianlao -->|"师徒"| n_linfeng',
    ]


def test_a_suggested_id_taken_by_someone_else_still_means_the_suggestion(book):
    payload = {
        "entities_new": [
            {"suggested_id": "linfeng", "name": "林枫", "type": "角色", "confidence": 0.9},
            {"suggested_id": "jianlao", "name": "剑佬", "type": "角色", "confidence": 0.2},
        ],
        "state_changes": [
            {"entity_id": "linfeng", "field": "realm", "new": "凡人", "confidence": 0.9},
            {"entity_id": "jianlao", "field": "realm", "new": "元婴", "confidence": 0.9},
        ],
    }
    result = extraction_ingest(book=book, number=4, payload=payload)
    assert result["created_entities"] == ["linfeng_1"]
    assert entity_state_as_of(entity=Entity.objects.get(entity_id="linfeng_1")) == {"realm": "凡人"}
    assert entity_state_as_of(entity=Entity.objects.get(entity_id="linfeng")) == {"realm": "炼气三层"}
    # The change of the held 剑佬 waits for it; once 剑佬 is confirmed (as jianlao_1) it lands there.
    assert entity_state_as_of(entity=Entity.objects.get(entity_id="jianlao")) == {}
    pending_item_confirm(item=PendingItem.objects.get(kind="entity_new"))
    pending_item_confirm(item=PendingItem.objects.get(kind="state_change"))
    assert entity_state_as_of(entity=Entity.objects.get(entity_id="jianlao_1")) == {"realm": "元婴"}
    assert entity_state_as_of(entity=Entity.objects.get(entity_id="jianlao")) == {}
