"""Persistence (DB + .story-system files) and the three override rules."""

import json

import pytest

from kernel.exceptions import InvalidInput, NotFound
from storysystem.markdown import BEGIN, END
from storysystem.models import StorySetting
from storysystem.selectors import chapter_effective, chapter_story, master_story
from storysystem.services import story_chapter_build, story_master_build

pytestmark = pytest.mark.django_db

MASTER_TONE = "先抑后扬"
MASTER_PACING = "前三章压到谷底，第三章末给第一次有效反击"


@pytest.fixture
def master(book):
    data, files = story_master_build(book=book, query="玄幻退婚流", persist=True)
    return data


def test_persist_writes_database_and_both_files(book, tmp_path):
    data, files = story_master_build(book=book, query="玄幻退婚流", persist=True)
    assert files == [".story-system/MASTER_SETTING.json", ".story-system/MASTER_SETTING.md"]
    setting = StorySetting.objects.get(book=book, chapter__isnull=True)
    assert setting.query == "玄幻退婚流" and setting.data == data
    on_disk = json.loads((tmp_path / ".story-system" / "MASTER_SETTING.json").read_text(encoding="utf-8"))
    assert on_disk == data
    md = (tmp_path / ".story-system" / "MASTER_SETTING.md").read_text(encoding="utf-8")
    assert md.startswith("# 《退婚之后》故事系统总设定\n\n" + BEGIN + "\n## Meta\n")
    assert "- `打脸节奏缺最后一拍补刀`（来源：S-PA-002）\n" in md
    assert md.count(BEGIN) == 1 and md.count(END) == 1


def test_without_persist_nothing_is_written(book, tmp_path):
    data, files = story_master_build(book=book, query="玄幻退婚流")
    assert files == [] and data["meta"]["book"] == "tuihun"
    assert not StorySetting.objects.exists()
    assert not (tmp_path / ".story-system").exists()


def test_human_notes_outside_the_markers_are_preserved(book, tmp_path):
    story_master_build(book=book, query="玄幻退婚流", persist=True)
    path = tmp_path / ".story-system" / "MASTER_SETTING.md"
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    edited = (
        "# 我的总设定\n作者手记：女主第三卷再出场。\n\n"
        + BEGIN
        + "\n旧内容\n"
        + END
        + "\n\n## 备忘\n- 别忘了师父的旧伤\n"
    )
    path.write_text(edited, encoding="utf-8")
    story_master_build(book=book, query="都市赘婿", persist=True)
    new = path.read_text(encoding="utf-8")
    assert new.startswith("# 我的总设定\n作者手记：女主第三卷再出场。\n\n" + BEGIN + "\n## Meta\n")
    assert new.endswith(END + "\n\n## 备忘\n- 别忘了师父的旧伤\n")
    assert "旧内容" not in new and "- 推断题材：都市赘婿" in new
    # a file whose markers were deleted gets a fresh block appended, the text kept
    path.write_text("只有笔记\n", encoding="utf-8")
    story_master_build(book=book, query="都市赘婿", persist=True)
    again = path.read_text(encoding="utf-8")
    assert again.startswith("只有笔记\n\n" + BEGIN + "\n## Meta\n") and again.endswith(END + "\n")


def test_chapter_files_and_json_is_the_source(book, master, tmp_path):
    data, files = story_chapter_build(book=book, number=15, query="压抑一点，后面爆", persist=True)
    assert ".story-system/chapters/chapter_015.json" in files and ".story-system/chapters/chapter_015.md" in files
    on_disk = json.loads((tmp_path / ".story-system/chapters/chapter_015.json").read_text(encoding="utf-8"))
    assert on_disk == data == chapter_story(book=book, number=15)
    assert data["meta"]["chapter_mode"] == "chapter" and data["meta"]["chapter"] == 15
    md = (tmp_path / ".story-system/chapters/chapter_015.md").read_text(encoding="utf-8")
    assert "- 章节模式：第15章\n" in md
    assert f"- 节奏策略：{MASTER_PACING}（来源：总设定）\n" in md  # issue 31: the query no longer replaces it
    assert "- 核心调性：先抑后扬（来源：总设定）\n" in md


def test_chapter_needs_a_master(book):
    with pytest.raises(NotFound, match="还没有故事系统总设定"):
        story_chapter_build(book=book, number=3, query="压抑一点")


def test_locked_field_is_refused_with_a_clear_message(book, master):
    with pytest.raises(InvalidInput) as exc:
        story_chapter_build(book=book, number=15, query="压抑一点", overrides={"核心调性": "轻松搞笑"}, persist=True)
    assert exc.value.message == (
        "第15章不能修改锁定字段「核心调性」：锁定字段只认总设定（总设定：先抑后扬；本章请求：轻松搞笑）。如需修改，请重建总设定。"
    )
    assert exc.value.extra == {"field": "核心调性", "policy": "locked", "master": MASTER_TONE, "requested": "轻松搞笑"}
    assert not StorySetting.objects.filter(chapter=15).exists()
    # restating the master's value is not a change
    story_chapter_build(book=book, number=15, query="压抑一点", overrides={"核心调性": MASTER_TONE}, persist=True)
    assert chapter_effective(book=book, number=15)["fields"]["核心调性"] == {
        "value": MASTER_TONE,
        "origin": "master",
        "policy": "locked",
    }


def test_route_suggestions_for_locked_fields_are_kept_aside_not_applied(book, master):
    data, _ = story_chapter_build(book=book, number=15, query="压抑一点，后面爆", persist=True)
    assert data["master_constraints"]["核心调性"] == MASTER_TONE
    assert data["chapter_overrides"]["ignored_locked"] == {
        "核心调性": "先抑后扬，蓄力引爆",
        "主冲突模板": "主角在退无可退之处一次性清算",
        "主角硬约束": ["爆发必须由主角亲手完成"],
        # issue 31: locked as the seed says — the query's suggestions are set aside, not applied
        "节奏策略": "压抑持续累积到临界点，再集中一次爆发",
        "全局毒点": ["压抑没有真实损失", "爆发只喊口号", "爆发后立刻恢复原状"],
    }


def test_override_allowed_takes_the_chapter_value(book, master):
    story_chapter_build(
        book=book, number=7, query="压抑一点", overrides={"本章节奏目标": "本章慢热，只铺垫不兑现"}, persist=True
    )
    field = chapter_effective(book=book, number=7)["fields"]["本章节奏目标"]
    assert field == {
        "value": "本章慢热，只铺垫不兑现",
        "origin": "chapter",
        "policy": "override_allowed",
        "master_value": "",
    }
    # a chapter without an override reads the master
    other = chapter_effective(book=book, number=8)
    assert other["has_chapter_override"] is False
    assert other["fields"]["节奏策略"] == {"value": MASTER_PACING, "origin": "master", "policy": "locked"}


def test_the_master_s_pacing_and_anti_patterns_are_locked_as_the_seed_says(book, master):
    # issue 31: a chapter may not replace the long-line 节奏策略 nor rewrite 全局毒点: refused with the reason
    with pytest.raises(InvalidInput) as exc:
        story_chapter_build(book=book, number=7, query="压抑一点", overrides={"节奏策略": "本章慢热"}, persist=True)
    assert exc.value.message.startswith("第7章不能修改锁定字段「节奏策略」：锁定字段只认总设定")
    with pytest.raises(InvalidInput, match="不能修改锁定字段「全局毒点」"):
        story_chapter_build(book=book, number=7, query="x", overrides={"全局毒点": "本章不许出现新角色"}, persist=True)
    # its own anti-patterns still add to the master's
    story_chapter_build(book=book, number=7, query="x", add_anti_patterns=["本章不许出现新角色"], persist=True)
    assert chapter_effective(book=book, number=7)["anti_patterns"][-1]["text"] == "本章不许出现新角色"


def test_append_only_is_the_deduplicated_union(book, master):
    # 全局毒点 is locked (issue 31, the seed); 全局禁区补充 stays append_only
    story_master_build(
        book=book, query="玄幻退婚流", overrides={"全局禁区补充": "打脸收尾太软|反击没有铺垫"}, persist=True
    )
    story_chapter_build(
        book=book, number=9, query="随便", overrides={"全局禁区补充": "打脸收尾太软|本章不许出现新角色"}, persist=True
    )
    field = chapter_effective(book=book, number=9)["fields"]["全局禁区补充"]
    assert field == {
        "value": ["打脸收尾太软", "反击没有铺垫", "本章不许出现新角色"],
        "origin": "master+chapter",
        "policy": "append_only",
        "added_by_chapter": ["本章不许出现新角色"],
    }
    # a shorter list cannot remove the master's items
    story_chapter_build(book=book, number=10, query="随便", overrides={"全局禁区补充": "反击没有铺垫"}, persist=True)
    assert chapter_effective(book=book, number=10)["fields"]["全局禁区补充"]["value"] == [
        "打脸收尾太软",
        "反击没有铺垫",
    ]


def test_effective_anti_patterns_are_master_union_chapter(book, master):
    story_chapter_build(book=book, number=15, query="压抑一点，后面爆", add_anti_patterns=["配角抢戏"], persist=True)
    effective = chapter_effective(book=book, number=15)
    master_texts = [a["text"] for a in master["anti_patterns"]]
    texts = [a["text"] for a in effective["anti_patterns"]]
    assert texts[: len(master_texts)] == master_texts
    assert texts[len(master_texts) :] == [
        "压抑没有真实损失",
        "爆发只喊口号",
        "爆发后立刻恢复原状",
        "爆发后立刻归零",
        "配角抢戏",
    ]
    assert {a["origin"] for a in effective["anti_patterns"][: len(master_texts)]} == {"master"}
    assert effective["anti_patterns"][-1] == {
        "text": "配角抢戏",
        "source_table": "作者",
        "source_code": "作者",
        "field": "作者追加",
        "origin": "chapter",
    }
    assert effective["anti_patterns"][-2]["source_code"] == "S-PA-001"


def test_a_chapter_cannot_remove_an_anti_pattern(book, master):
    with pytest.raises(
        InvalidInput, match="第15章不能删除毒点：章节只能追加毒点，不能删除总设定的毒点（请求删除：当场翻盘）"
    ):
        story_chapter_build(book=book, number=15, query="压抑", remove_anti_patterns=["当场翻盘"], persist=True)


def test_rebuilding_the_master_rewrites_chapter_files_with_the_new_locked_values(book, master, tmp_path):
    story_chapter_build(book=book, number=15, query="压抑一点，后面爆", persist=True)
    story_master_build(book=book, query="都市赘婿", persist=True)
    data = json.loads((tmp_path / ".story-system/chapters/chapter_015.json").read_text(encoding="utf-8"))
    assert data["master_constraints"]["核心调性"] == "隐忍之后的身份反转"
    assert data["field_origins"]["节奏策略"] == "master"  # issue 31: locked
    assert master_story(book=book)["meta"]["inferred_genre"] == "都市赘婿"


def test_book_yaml_can_change_the_policy(book, master):
    book.config = {
        "story_system": {"override_policy": {"locked": ["主冲突模板"], "override_allowed": ["核心调性", "节奏策略"]}}
    }
    book.save()
    story_chapter_build(book=book, number=2, query="x", overrides={"核心调性": "轻松搞笑"}, persist=True)
    effective = chapter_effective(book=book, number=2)
    assert effective["fields"]["核心调性"]["origin"] == "chapter"
    # fields listed nowhere fall back to locked (the safe side); append_only keeps its default
    assert effective["override_policy"]["locked"] == [
        "主冲突模板",
        "金手指硬限制",
        "主角硬约束",
        "全局毒点",
        "主路由题材",
        "主角底层人设",
        "世界规则闭环",
        "本章桥段",
        "本章场景",
        "本章节奏目标",
        "本章局部情绪侧重",
        "本章输出重点",
    ]


def test_book_without_root_cannot_persist(db):
    from core.models import Book

    rootless = Book.objects.create(slug="noroot", root="")
    with pytest.raises(InvalidInput, match="没有书籍文件夹"):
        story_master_build(book=rootless, query="玄幻退婚流", persist=True)
    assert not StorySetting.objects.filter(book=rootless).exists()


def test_a_vague_query_falls_back_to_the_books_genre_before_the_generic_route(book):
    data, _ = story_master_build(book=book, query="随便写点什么")
    assert (data["route"]["method"], data["route"]["primary"]["code"]) == ("book_genre", "S-GR-001")
    assert data["meta"]["explicit_genre"] is None and data["meta"]["inferred_genre"] == "玄幻退婚流"
    # without a book (or with an explicit genre) the usual order holds
    assert story_master_build(book=book, query="随便写点什么", genre="现言")[0]["route"]["method"] == "explicit"


# ---------------------------------------------------------------- seed 003 §10.4's field sets


def test_seed_override_allowed_fields_are_set_per_chapter(book, master):
    data, _ = story_chapter_build(
        book=book,
        number=15,
        query="压抑一点，后面爆",
        overrides={"本章输出重点": "林风第一次拔剑", "本章场景": "雨夜山门"},
        persist=True,
    )
    assert data["master_constraints"]["本章输出重点"] == "林风第一次拔剑"
    assert data["field_origins"]["本章场景"] == "chapter"
    effective = chapter_effective(book=book, number=15)["fields"]
    assert effective["本章输出重点"] == {
        "value": "林风第一次拔剑",
        "origin": "chapter",
        "policy": "override_allowed",
        "master_value": "",
    }
    # A seed field nobody gave is not in the dict; another chapter does not inherit this one's.
    assert "本章桥段" not in effective
    assert "本章输出重点" not in chapter_effective(book=book, number=16)["fields"]


def test_seed_locked_fields_come_from_the_master_only(book):
    story_master_build(
        book=book, query="玄幻退婚流", overrides={"主路由题材": "玄幻", "世界规则闭环": "灵气守恒"}, persist=True
    )
    assert master_story(book=book)["master_constraints"]["主路由题材"] == "玄幻"
    with pytest.raises(InvalidInput) as exc:
        story_chapter_build(book=book, number=3, query="x", overrides={"主路由题材": "言情"})
    assert exc.value.message == (
        "第3章不能修改锁定字段「主路由题材」：锁定字段只认总设定（总设定：玄幻；本章请求：言情）。如需修改，请重建总设定。"
    )
    with pytest.raises(InvalidInput, match="锁定字段「主角底层人设」.*总设定：（空）"):
        story_chapter_build(book=book, number=3, query="x", overrides={"主角底层人设": "嘴硬心软"})
    # Repeating the master's value is no change.
    data, _ = story_chapter_build(book=book, number=3, query="x", overrides={"世界规则闭环": "灵气守恒"})
    assert data["master_constraints"]["世界规则闭环"] == "灵气守恒"


def test_seed_append_only_fields_are_the_union(book):
    story_master_build(book=book, query="玄幻退婚流", overrides={"长线伏笔": "断剑来历|师父旧伤"}, persist=True)
    story_chapter_build(
        book=book,
        number=7,
        query="x",
        overrides={"长线伏笔": "师父旧伤|雾海图", "全局禁区补充": "不写主角求饶"},
        persist=True,
    )
    fields = chapter_effective(book=book, number=7)["fields"]
    assert fields["长线伏笔"] == {
        "value": ["断剑来历", "师父旧伤", "雾海图"],
        "origin": "master+chapter",
        "policy": "append_only",
        "added_by_chapter": ["雾海图"],
    }
    assert fields["全局禁区补充"]["value"] == ["不写主角求饶"]
    # A 全局禁区补充 is a prohibition: it joins the chapter's effective anti-patterns.
    anti = chapter_effective(book=book, number=7)["anti_patterns"]
    assert {"text": "不写主角求饶", "origin": "chapter"}.items() <= next(
        a for a in anti if a["text"] == "不写主角求饶"
    ).items()


def test_an_unknown_field_lists_every_field(book, master):
    with pytest.raises(InvalidInput) as exc:
        story_chapter_build(book=book, number=2, query="x", overrides={"文风": "冷"})
    assert exc.value.message.startswith("未知的设定字段「文风」，可用字段：核心调性、节奏策略、")
    assert exc.value.message.endswith("本章局部情绪侧重、本章输出重点")
    assert len(exc.value.extra["available"]) == 18
