import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.models import Book, Chapter
from entities.models import Entity, Extraction, LegacyRecord, PendingItem, Relationship, StateChange
from entities.selectors import entity_relationships, entity_state_as_of, extraction_get
from entities.services.ingest import extraction_ingest

pytestmark = pytest.mark.django_db

V50 = {
    "version": "5.0",
    "entities_v3": {
        "角色": {
            "xiaoyan": {
                "canonical_name": "萧炎",
                "tier": "核心",
                "desc": "主角",
                "current": {"realm": "斗师", "location": "乌坦城"},
                "aliases": ["炎帝", {"alias": "萧家三少爷", "to": 100}],
                "history": [{"chapter": 3, "note": "觉醒"}],
                "first_appearance": 1,
                "last_appearance": 12,
                "is_protagonist": True,
                "mood": "坚毅",
            },
            "yaolao": {
                "name": "药老",
                "tier": "重要",
                "desc": "戒指中的灵魂",
                "aliases": ["药尘"],
                "first_appearance": 2,
            },
        },
        "物品": {"item_najie": {"name": "纳戒", "tier": "minor", "current": {"owner": "xiaoyan"}}},
        "神兽": {"x": {"name": "小紫"}},
    },
    "alias_index": {
        "炎帝": [{"type": "角色", "id": "xiaoyan"}],
        "老师": [{"type": "角色", "id": "yaolao"}],
        "鬼": [{"type": "角色", "id": "ghost"}],
    },
    "state_changes": [
        {"entity_id": "xiaoyan", "field": "realm", "old": "斗者", "new": "斗师", "reason": "突破", "chapter": 10},
        {
            "entity_id": "xiaoyan",
            "field": "location",
            "old_value": "萧家",
            "new_value": "乌坦城",
            "reason": "离家",
            "chapter": 11,
        },
        {"entity_id": "nobody", "field": "x", "new": 1, "chapter": 2},
    ],
    "structured_relationships": [
        {"from_entity": "yaolao", "to_entity": "xiaoyan", "type": "师徒", "description": "收徒", "chapter": 5},
        {"from": "xiaoyan", "to": "item_najie", "type": "持有", "chapter": 2},
    ],
}

V6 = {
    "version": "6.0",
    "progress": {"current_chapter": 4, "total_words": 12000},
    "protagonist_state": {"name": "萧炎", "realm": "斗师"},
    "strand_tracker": {"quest": [1, 2, 4], "fire": [3]},
    "entities_v3": {
        "角色": {"xiaoyan": {"name": "萧炎", "tier": "核心", "is_protagonist": True, "current": {"realm": "斗师"}}}
    },
    "plot_threads": {
        "foreshadowing": [
            {"content": "戒指中的老者", "status": "未回收", "planted_chapter": 1, "target_chapter": 30, "tier": "核心"},
            {
                "content": "退婚",
                "status": "已回收",
                "planted_chapter": 1,
                "target_chapter": 3,
                "tier": "重要",
                "resolved_chapter": 3,
            },
        ]
    },
    "chapter_meta": {
        "0003": {"hook": "悬念钩", "pattern": "打脸", "ending": "高潮"},
        "0004": {"hook": "危机钩"},
        "abc": {"x": 1},
    },
    "disambiguation_warnings": [
        {"mention": f"那人{i}", "chapter": 3, "chosen": "xiaoyan", "confidence": 0.6} for i in range(40)
    ],
    "disambiguation_pending": [
        {"mention": "老头", "candidates": ["yaolao", "xiaoyan"], "chapter": 4, "confidence": 0.3}
    ],
    "relationships": {"xiaoyan": {"xiaoyan": "自己", "nalanyanran": "退婚"}},
    "world_settings": {"power": ["斗者", "斗师"]},
}


def _project(tmp_path, state) -> tuple:
    root = tmp_path / "doupo"
    (root / ".webnovel").mkdir(parents=True)
    path = root / ".webnovel" / "state.json"
    path.write_text(json.dumps(state, ensure_ascii=False, indent=2), encoding="utf-8")
    return root, path


def _run(*args) -> dict:
    out = io.StringIO()
    call_command("migrate_state", *args, stdout=out)
    return json.loads(out.getvalue())


def test_v50_dry_run_writes_nothing_then_commit_maps_everything(tmp_path):
    root, path = _project(tmp_path, V50)
    before = path.read_bytes()
    dry = _run(str(root))
    assert dry["dry_run"] is True and dry["created"]["entities"] == 3
    assert not Book.objects.exists() and path.read_bytes() == before

    summary = _run(str(root), "--commit")
    assert summary["version"] == "5.0"
    assert summary["created"] == {
        "entities": 3,
        "aliases": 4,
        "appearances": 3,
        "legacy": 5,
        "state_changes": 2,
        "relationships": 2,
    }
    assert set(summary["keys"]) == set(V50)  # every input key is accounted for
    assert {k: v["status"] for k, v in summary["keys"].items()} == {
        "version": "kept",
        "entities_v3": "mapped",
        "alias_index": "mapped",
        "state_changes": "mapped",
        "structured_relationships": "mapped",
    }
    book = Book.objects.get(slug="doupo")
    xiaoyan = Entity.objects.get(book=book, entity_id="xiaoyan")
    # Each entity's own aliases survive (the old tool dropped them), with their window.
    assert sorted(xiaoyan.aliases.values_list("alias", "valid_to")) == [("炎帝", None), ("萧家三少爷", 100)]
    assert sorted(Entity.objects.get(entity_id="yaolao").aliases.values_list("alias", flat=True)) == ["老师", "药尘"]
    assert (xiaoyan.first_appearance, xiaoyan.last_appearance, xiaoyan.is_protagonist, xiaoyan.tier) == (
        1,
        12,
        True,
        "核心",
    )
    assert Entity.objects.get(entity_id="item_najie").tier == "次要"
    # State over time: the replay reproduces 'current', and as_of goes back to before the changes.
    assert entity_state_as_of(entity=xiaoyan, number=9) == {"realm": "斗者", "location": "萧家"}
    assert entity_state_as_of(entity=xiaoyan, number=10) == {"realm": "斗师", "location": "萧家"}
    assert entity_state_as_of(entity=xiaoyan) == {"realm": "斗师", "location": "乌坦城"}
    rels = entity_relationships(book=book, ref="xiaoyan")["relationships"]
    assert [(r["from"], r["type"], r["to"], r["chapter"]) for r in rels] == [
        ("xiaoyan", "持有", "item_najie", 2),
        ("yaolao", "师徒", "xiaoyan", 5),
    ]
    legacy = {r.key: r.value for r in LegacyRecord.objects.filter(book=book)}
    assert legacy == {
        "version": "5.0",
        "entities_v3.角色.xiaoyan": {"history": [{"chapter": 3, "note": "觉醒"}], "mood": "坚毅"},
        "entities_v3.神兽": {"x": {"name": "小紫"}},
        "alias_index.unresolved": {"鬼": [{"type": "角色", "id": "ghost"}]},
        "state_changes.unmapped": [{"entity_id": "nobody", "field": "x", "new": 1, "chapter": 2}],
    }
    # Backup and slim file.
    backup = root / ".webnovel" / summary["backup"].rsplit("/", 1)[-1]
    assert backup.read_bytes() == before
    slim = json.loads(path.read_text(encoding="utf-8"))
    assert set(slim) == {"_migrated"} and slim["_migrated"]["backup"] == backup.name

    # Running it twice changes nothing.
    slim_bytes = path.read_bytes()
    counts = (
        Entity.objects.count(),
        StateChange.objects.count(),
        Relationship.objects.count(),
        LegacyRecord.objects.count(),
    )
    again = _run(str(root), "--commit")
    assert again["already_migrated"] is True and again["changed"] is False and again["created"] == {}
    assert path.read_bytes() == slim_bytes
    assert counts == (
        Entity.objects.count(),
        StateChange.objects.count(),
        Relationship.objects.count(),
        LegacyRecord.objects.count(),
    )


def test_v6_maps_meta_queue_and_keeps_the_rest(tmp_path):
    root, path = _project(tmp_path, V6)
    summary = _run(str(root), "--commit")
    assert summary["version"] == "6.0"
    assert set(summary["keys"]) == set(V6)
    assert {k: v["status"] for k, v in summary["keys"].items()} == {
        "version": "kept",
        "progress": "kept",
        "protagonist_state": "kept",
        "strand_tracker": "kept",
        "entities_v3": "mapped",
        "plot_threads": "kept",
        "chapter_meta": "mapped",
        "disambiguation_warnings": "mapped",
        "disambiguation_pending": "mapped",
        "relationships": "mapped+kept",
        "world_settings": "kept",
    }
    book = Book.objects.get(slug="doupo")
    # chapter_meta → the chapter's extraction record (the old tool dropped it all).
    assert extraction_get(book=book, number=3)["chapter_meta"] == {
        "hook": "悬念钩",
        "pattern": "打脸",
        "ending": "高潮",
    }
    assert Extraction.objects.filter(book=book).count() == 2
    # Disambiguation records → the pending queue (lowest confidence first).
    queue = PendingItem.objects.filter(book=book, kind="disambiguation")
    assert queue.count() == 41
    assert queue.order_by("confidence").first().payload["mention"] == "老头"
    legacy = {r.key: r.value for r in LegacyRecord.objects.filter(book=book)}
    assert legacy["plot_threads"] == V6["plot_threads"]
    assert legacy["chapter_meta.unmapped"] == {"abc": {"x": 1}}
    assert legacy["relationships"] == V6["relationships"] and legacy["world_settings"] == V6["world_settings"]
    assert legacy["progress"] == V6["progress"] and legacy["strand_tracker"] == V6["strand_tracker"]
    # The relationships dict: 自己 maps (xiaoyan → xiaoyan); the unknown 纳兰嫣然 stays in the verbatim copy.
    assert list(Relationship.objects.values_list("type", flat=True)) == ["自己"]
    # The slim state.json: < 5 KB, the three kept keys and the most recent disambiguation records.
    slim = json.loads(path.read_text(encoding="utf-8"))
    assert len(path.read_bytes()) < 5 * 1024
    assert slim["progress"] == V6["progress"] and slim["strand_tracker"] == V6["strand_tracker"]
    assert [w["mention"] for w in slim["disambiguation_warnings"]] == [f"那人{i}" for i in range(30, 40)]
    assert slim["disambiguation_pending"] == V6["disambiguation_pending"]
    assert _run(str(root), "--commit")["changed"] is False


def test_migrated_chapter_meta_survives_ingestion_and_export(tmp_path):
    root, _ = _project(tmp_path, V6)
    _run(str(root), "--commit")
    book = Book.objects.get(slug="doupo")
    for n in range(1, 5):
        Chapter.objects.create(book=book, number=n, title=f"第{n}章", body="萧炎", word_count=3000)
    extraction_ingest(book=book, number=3, payload={"chapter_meta": {"hook": "危机钩"}})
    extraction_ingest(book=book, number=3, payload={"chapter_meta": {"hook": "危机钩"}})
    assert extraction_get(book=book, number=3)["chapter_meta"] == {
        "hook": "危机钩",
        "pattern": "打脸",
        "ending": "高潮",
    }

    out = io.StringIO()
    call_command("export_state", "doupo", stdout=out)
    state = json.loads(out.getvalue())
    assert state["progress"] == {"current_chapter": 4, "total_words": 12000}
    assert state["protagonist_state"] == {"name": "萧炎", "realm": "斗师", "id": "xiaoyan"}
    assert state["strand_tracker"] == V6["strand_tracker"]
    assert [p["mention"] for p in state["disambiguation_pending"]][-1] == "老头"
    assert len(out.getvalue().encode("utf-8")) < 5 * 1024


def test_missing_or_broken_state_file(tmp_path):
    with pytest.raises(CommandError, match="找不到"):
        _run(str(tmp_path))
    (tmp_path / ".webnovel").mkdir()
    (tmp_path / ".webnovel" / "state.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(CommandError, match="不是有效的 JSON（第 1 行第 2 列）"):
        _run(str(tmp_path))


def test_current_wins_over_an_existing_file_entity(tmp_path):
    state = {
        "progress": {"current_chapter": 20},
        "entities_v3": {"角色": {"xiaoyan": {"name": "萧炎", "current": {"realm": "斗王"}, "aliases": ["炎帝"]}}},
        "state_changes": [{"entity_id": "xiaoyan", "field": "realm", "old": "斗者", "new": "斗师", "chapter": 10}],
    }
    root, _ = _project(tmp_path, state)
    book = Book.objects.create(slug="dp", root=str(root.resolve()))
    Entity.objects.create(
        book=book, entity_id="xiaoyan", type="角色", canonical_name="萧炎", base_state={"realm": "斗者"}
    )
    summary = _run(str(root), "--commit")
    assert summary["book"] == "dp" and summary["keys"]["entities_v3"]["current_reconciled"] == 1
    xiaoyan = Entity.objects.get(entity_id="xiaoyan")
    assert xiaoyan.source == "file" and xiaoyan.base_state == {"realm": "斗者"}
    assert [entity_state_as_of(entity=xiaoyan, number=n)["realm"] for n in (9, 10, 19, 20)] == [
        "斗者",
        "斗师",
        "斗师",
        "斗王",
    ]
    assert StateChange.objects.get(chapter=20).reason == "迁移：以 state.json 的 current 为准"
    assert _run(str(root), "--commit")["changed"] is False
