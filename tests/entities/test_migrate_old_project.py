"""Migration of a realistic old (v5/v6 plugin) project folder: state.json with entities_v3, display
names beside canonical ones and pronoun aliases; 正文/ chapter files; .webnovel/summaries; the old
memory_scratchpad.json. The migrated folder rebuilds with its chapters."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from bookfiles.rebuilder import book_rebuild
from core.models import Book, Chapter
from entities.models import Alias, AmbiguousMention, Entity, LegacyRecord
from entities.selectors import entity_stats
from entities.services.ingest import extraction_ingest
from memory.models import Fact

pytestmark = pytest.mark.django_db

STATE = {
    "version": "6.0",
    "project_info": {"title": "斗破苍穹", "genre": "玄幻"},
    "progress": {"current_chapter": 4, "total_words": 9000},
    "protagonist_state": {"name": "萧炎", "realm": "斗者"},
    "entities_v3": {
        "角色": {
            "xiaoyan": {
                "canonical_name": "萧炎",
                "name": "萧炎",
                "tier": "核心",
                "is_protagonist": True,
                "aliases": ["炎儿", "他", "少年", "萧家三少爷"],
                "current": {"realm": "斗者", "location": "乌坦城"},
                "first_appearance": 1,
            },
            "yaochen": {
                "canonical_name": "药尘",
                "name": "药老",
                "tier": "重要",
                "aliases": ["老者", "老师"],
                "first_appearance": 3,
            },
            "xuner": {"canonical_name": "萧薰儿", "name": "薰儿", "aliases": ["她", "少女", "那个少女"]},
        },
        "地点": {"loc_wutancheng": {"name": "乌坦城", "aliases": ["乌坦"]}},
    },
    "alias_index": {"他": [{"type": "角色", "id": "xiaoyan"}], "药老": [{"type": "角色", "id": "yaochen"}]},
    "state_changes": [
        {"entity_id": "xiaoyan", "field": "realm", "old": "斗之气九段", "new": "斗者", "reason": "突破", "chapter": 4}
    ],
    "chapter_meta": {"0004": {"hook": "戒指异动"}},
}
CHAPTERS = {
    "正文/第0001章-落魄天才.md": "# 第1章 落魄天才\n\n萧炎站在测验石前。少年低下了头。\n",
    "正文/第2章 斗之气.md": "萧炎苦修。他不信命。\n",
    "正文/第0003章-药老.md": "---\nmood: 悬疑\n---\n# 第3章 药老\n\n戒指里的老者醒了，药老笑道：“小家伙。”\n",
    "正文/第0004章-突破.md": "萧炎突破斗者，薰儿看着他。\n",
    "正文/草稿-废弃.md": "不是章节。\n",
}
SUMMARIES = {
    "ch0001.md": "# 第1章摘要\n\n萧炎测验斗之气，三段，受尽冷眼。\n",
    "ch0003.md": "药老在戒指中苏醒。\n",
    "ch0009.md": "还没写到的一章。\n",
}
SCRATCHPAD = {
    "version": 2,
    "updated_at": "2025-03-01T10:00:00",
    "character_state": [
        {"id": "cs_001", "entity": "萧炎", "realm": "斗者", "location": "乌坦城", "chapter": 4},
        {"id": "cs_002", "character": "萧薰儿", "attribute": "身份", "value": "古族", "chapter": 2, "status": "open"},
        {"id": "cs_003", "chapter": 2},
    ],
    "world_rules": [{"id": "wr_001", "subject": "斗气", "field": "等级", "value": "斗之气、斗者、斗师", "chapter": 1}],
    "open_loops": [{"id": "ol_001", "content": "戒指里的老者是谁", "chapter": 1, "status": "open"}],
    "relationships": [{"from": "萧炎", "to": "药尘", "type": "师徒"}],
}


def _project(root: Path) -> Path:
    files = {**CHAPTERS, **{f".webnovel/summaries/{k}": v for k, v in SUMMARIES.items()}}
    files[".webnovel/state.json"] = json.dumps(STATE, ensure_ascii=False, indent=2)
    files[".webnovel/memory_scratchpad.json"] = json.dumps(SCRATCHPAD, ensure_ascii=False)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _migrate(root: Path, *args: str) -> dict:
    out = io.StringIO()
    call_command("migrate_state", str(root), *args, stdout=out)
    return json.loads(out.getvalue())


def test_old_project_migrates_names_generic_aliases_and_chapters(tmp_path):
    root = _project(tmp_path / "doupo")
    dry = _migrate(root)
    assert dry["book_files"]["would_write"] == [
        "book.yaml",
        "定稿/正文/第0001章.md",
        "定稿/正文/第0002章.md",
        "定稿/正文/第0003章.md",
        "定稿/正文/第0004章.md",
    ]
    assert not (root / "book.yaml").exists() and not (root / "定稿").exists()

    summary = _migrate(root, "--commit", "--backup")
    assert summary["generic_aliases"] == [
        "xiaoyan:他",
        "xiaoyan:少年",
        "yaochen:老者",
        "xuner:她",
        "xuner:少女",
        "xuner:那个少女",
    ]
    assert (
        "6 个别名是代词或泛称（他、少年、老者、她、少女、那个少女）：按泛称导入（弱提及，不计出场），见 generic_aliases"
        in (summary["problems"])
    )
    book = Book.objects.get(slug="doupo")
    names = dict(Alias.objects.filter(book=book, entity__entity_id="yaochen").values_list("alias", "generic"))
    assert names == {"药老": False, "老者": True, "老师": False}  # 药老 (the old display name) is kept
    assert Alias.objects.get(book=book, entity__entity_id="xuner", alias="薰儿").note == "迁移：state.json 的 name"
    files = summary["book_files"]
    assert (files["chapters"], files["summaries"]) == (4, 2)
    assert files["skipped"] == [
        "正文/草稿-废弃.md：文件名不是 第N章[-标题]，未转换",
        "1 个摘要没有对应的章节文件（第9章）",
    ]
    assert (root / "定稿/正文/第0003章.md").read_text(encoding="utf-8") == (
        "---\nmood: 悬疑\ntitle: 药老\nsummary: 药老在戒指中苏醒。\n---\n戒指里的老者醒了，药老笑道：“小家伙。”\n"
    )
    assert (root / "正文/第0003章-药老.md").exists()  # the old files stay

    report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    chapters = list(Chapter.objects.filter(book=book).order_by("number").values_list("number", "title", "summary"))
    assert chapters == [
        (1, "落魄天才", "萧炎测验斗之气，三段，受尽冷眼。"),
        (2, "斗之气", ""),
        (3, "药老", "药老在戒指中苏醒。"),
        (4, "突破", ""),
    ]
    assert Book.objects.get(pk=book.pk).title == "斗破苍穹"
    xiaoyan = Entity.objects.get(book=book, entity_id="xiaoyan")
    assert (xiaoyan.source, xiaoyan.first_appearance) == ("migration", 1)
    # every 他 / 少年 / 老者 is a weak mention, never an appearance of the protagonist
    weak = AmbiguousMention.objects.filter(book=book, generic=True).order_by("chapter", "alias")
    assert list(weak.values_list("chapter", "alias", "candidates")) == [
        (1, "少年", ["xiaoyan"]),
        (2, "他", ["xiaoyan"]),
        (3, "老者", ["yaochen"]),
        (4, "他", ["xiaoyan"]),
    ]
    assert entity_stats(book=book)["weak_mentions"] == 4
    # a second migration (already migrated, files there) changes nothing and overwrites nothing
    again = _migrate(root, "--commit")
    assert (again["changed"], again["book_files"]["written"]) == (False, [])


def test_old_memory_scratchpad_maps_what_maps_and_keeps_the_rest(tmp_path):
    root = _project(tmp_path / "doupo")
    migrated = _migrate(root, "--commit")
    assert migrated["memory"]["created"] == 5  # issue 31: migrate_state brings the scratchpad in too
    out = io.StringIO()
    call_command("memory_import", "doupo", str(root / ".webnovel/memory_scratchpad.json"), stdout=out)
    result = json.loads(out.getvalue())
    assert result["mapped"] == {
        "character_state": "character_facts",
        "world_rules": "world_rules",
        "open_loops": "open_loops",
    }
    assert result["kept"] == ["character_state.unmapped", "relationships"]
    assert result["skipped"] == [
        {
            "item": "character_state[2]",
            "reason": "缺少 subject、field 或 value（也认 entity / attribute / content 等同义键）",
        }
    ]
    assert (result["created"], result["updated"]) == (0, 5)  # the same ids: updated, not duplicated
    facts = Fact.objects.filter(book__slug="doupo").order_by("key")
    assert list(facts.values_list("key", "category", "subject", "field", "value", "source_chapter")) == [
        ("cs_001.location", "character_facts", "萧炎", "location", "乌坦城", 4),
        ("cs_001.realm", "character_facts", "萧炎", "realm", "斗者", 4),
        ("cs_002", "character_facts", "萧薰儿", "身份", "古族", 2),
        ("ol_001", "open_loops", "ol_001", "content", "戒指里的老者是谁", 1),
        ("wr_001", "world_rules", "斗气", "等级", "斗之气、斗者、斗师", 1),
    ]
    kept = LegacyRecord.objects.get(book__slug="doupo", key="memory_scratchpad.relationships")
    assert kept.value == [{"from": "萧炎", "to": "药尘", "type": "师徒"}]


def test_extraction_report_lists_only_the_entities_it_created(tmp_path):
    root = _project(tmp_path / "doupo")
    _migrate(root, "--commit")
    book_rebuild(root=root)
    book = Book.objects.get(slug="doupo")
    payload = {
        "entities_new": [
            {"suggested_id": "yaochen", "name": "药尘", "type": "角色", "confidence": 0.9},  # matched: migrated
            {"name": "萧炎", "type": "角色", "confidence": 0.9},  # matched by name and type
            {"suggested_id": "xiaozhan", "name": "萧战", "type": "角色", "confidence": 0.9},
        ]
    }
    assert extraction_ingest(book=book, number=3, payload=payload)["created_entities"] == ["xiaozhan"]
    # re-ingesting the chapter: still the one it created, and it is kept (not dropped as an orphan)
    assert extraction_ingest(book=book, number=3, payload=payload)["created_entities"] == ["xiaozhan"]
    assert Entity.objects.filter(book=book, entity_id="xiaozhan").exists()
    payload["entities_new"] = payload["entities_new"][:2]
    assert extraction_ingest(book=book, number=3, payload=payload)["created_entities"] == []
    assert not Entity.objects.filter(book=book, entity_id="xiaozhan").exists()
    assert Entity.objects.filter(book=book, entity_id="yaochen").exists()


def test_a_book_yaml_naming_another_book_is_reported_and_kept(tmp_path):
    root = _project(tmp_path / "doupo")
    (root / "book.yaml").write_text("slug: dpcq\ntitle: 斗破\n", encoding="utf-8")
    files = _migrate(root, "--commit")["book_files"]
    assert "book.yaml" not in files["written"] and len(files["written"]) == 4
    assert files["problems"] == [
        "book.yaml 的 slug 是 'dpcq'，迁移写入的书是 'doupo'：rebuild 会建成另一本书，"
        "请把 book.yaml 的 slug 改为 doupo，或用 --book dpcq 重新迁移"
    ]
    assert (root / "book.yaml").read_text(encoding="utf-8") == "slug: dpcq\ntitle: 斗破\n"


def test_the_whole_old_project_migrates_in_one_command(tmp_path):
    # issue 31: facts, threads, worldview, outlines — and the report lists everything it did not take
    root = _project(tmp_path / "doupo")
    state = {
        **STATE,
        "plot_threads": {
            "foreshadowing": [
                {
                    "id": "fs_001",
                    "content": "戒指里的秘密",
                    "planted_chapter": 1,
                    "target_chapter": 30,
                    "urgency": "high",
                },
                {
                    "id": "fs_002",
                    "content": "三年之约",
                    "planted_chapter": 2,
                    "status": "resolved",
                    "resolved_chapter": 4,
                },
            ]
        },
    }
    (root / ".webnovel/state.json").write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
    pad = {
        **SCRATCHPAD,
        "open_loops": [
            {"id": "ol_001", "content": "戒指里的老者是谁", "chapter": 1, "layer": "episodic",
             "payload": {"urgency": "high", "expected_payoff": 30}},
            {"id": "ol_002", "subject": "萧炎", "field": "", "value": "三年之约", "chapter": 2},
        ],
    }  # fmt: skip
    (root / ".webnovel/memory_scratchpad.json").write_text(json.dumps(pad, ensure_ascii=False), encoding="utf-8")
    files = {
        "设定集/世界观.md": "# 世界观\n\n## 力量体系\n斗之气、斗者、斗师。\n",
        "设定集/角色/萧炎.md": "# 萧炎\n",
        "大纲/总纲.md": "# 总纲\n\n## 主线\n三十年河东。\n\n## 结局\n斗帝。\n",
        "大纲/第1卷-详细大纲.md": "# 第一卷\n\n## 卷旨\n落魄。\n",
        "大纲/时间线.md": "第1章 测验\n",
        "大纲/灵感.md": "随手记。\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")

    summary = _migrate(root, "--commit")
    assert summary["book_files"]["threads"] == 2
    assert summary["book_files"]["documents"] == ["大纲/卷纲/第1卷.md", "设定/世界观.md"]
    not_taken = {row["what"]: row["why"] for row in summary["not_taken"]}
    assert not_taken["设定集/角色/萧炎.md"].startswith("设定集里只有 世界观.md 有对应格式")
    assert not_taken["大纲/时间线.md"].startswith("时间线没有卷号")
    assert not_taken["大纲/灵感.md"].startswith("本格式只读 大纲/总纲.md")
    assert not_taken["memory_scratchpad.json 的 relationships"] == "没有对应的记忆类别：原样保存在 LegacyRecord"
    assert "正文/草稿-废弃.md" in not_taken

    report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    book = Book.objects.get(slug="doupo")
    threads = {t.thread_id: t for t in book.threads.all()}
    assert sorted(threads) == ["伏笔-001", "伏笔-002"]
    assert (threads["伏笔-001"].title, threads["伏笔-001"].strength, threads["伏笔-001"].opened_chapter) == (
        "戒指里的秘密",
        "高",
        1,
    )
    assert (threads["伏笔-002"].status, threads["伏笔-002"].closed_chapter) == ("已收尾", 4)
    from core.selectors import worldview_section
    from memory.selectors import scratchpad_export

    assert worldview_section(book=book, heading="力量体系").strip() == "斗之气、斗者、斗师。"
    exported = {i["id"]: i for i in scratchpad_export(book=book)["open_loops"]}
    assert (exported["ol_001"]["payload"], exported["ol_001"]["layer"]) == (
        {"urgency": "high", "expected_payoff": 30},
        "episodic",
    )
    assert exported["ol_002"]["field"] == ""
