"""What the writing agent reads must be right (issue 12 §5): the effective Story System as its own
section, state keys in the authors' words, no empty facts, settings not dated 第0章, and a young
book's pacing said to be too young to judge — through every door of the pack."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from entities.state_labels import STATE_FIELD_LABELS
from memory.orchestrator import build_memory_pack
from tests.conftest import DEMO_BOOK

pytestmark = pytest.mark.django_db

RAW_KEY = re.compile(r"(?:^|；)(" + "|".join(STATE_FIELD_LABELS) + r")：", re.M)


def _item(pack, item_id):
    return next(i for i in pack["items"] if i["id"] == item_id)


@pytest.fixture
def story(filled, tmp_path):
    """The small book with a persisted master setting (seed library, 玄幻退婚流) and a chapter-7
    override that sets its own pace goal (本章节奏目标: the long-line 节奏策略 is the master's, locked since
    issue 31) and adds an anti-pattern."""
    from storysystem.services import story_chapter_build, story_master_build

    filled.root = str(tmp_path)  # the .story-system files are written into the book folder
    filled.save()
    story_master_build(book=filled, query="玄幻退婚流", persist=True)
    story_chapter_build(
        book=filled,
        number=7,
        query="拍卖会上低调捡漏",
        overrides={"本章节奏目标": "本章慢节奏，埋伏笔"},
        add_anti_patterns=["配角抢戏"],
        persist=True,
    )
    return filled


def test_the_effective_story_system_is_its_own_section(story):
    pack = build_memory_pack(book=story, number=7, budget_tokens=8000)
    item = _item(pack, "story_system")
    assert item["title"] == "故事系统·第7章生效设定（总设定＋本章覆盖）"
    assert (item["layer"], item["priority"], item["included"]) == ("working", 86, True)
    assert item["reason"] == "纳入（优先级 86）"
    assert item["tokens"] == 364
    block = pack["text"].split("【故事系统·第7章生效设定（总设定＋本章覆盖）】\n", 1)[1].split("\n【", 1)[0]
    lines = block.splitlines()
    assert lines[0] == "核心调性：先抑后扬"  # the master's, locked
    assert lines[1] == "节奏策略：前三章压到谷底，第三章末给第一次有效反击"  # the master's long line, locked
    assert lines[2] == "主冲突模板：被轻视的主角以约定之日为期证明自己"
    assert lines[5] == "本章节奏目标（本章）：本章慢节奏，埋伏笔"  # the chapter's own pace goal
    assert not any(line.startswith("全局毒点") for line in lines)  # merged into the anti-patterns
    assert lines[-1].startswith("禁忌（毒点，26 条）：反击没有铺垫；打脸收尾太软；配角替主角出头；")
    assert lines[-1].endswith("；配角抢戏（本章）")
    # another chapter has no override: the master alone
    other = _item(build_memory_pack(book=story, number=5, budget_tokens=8000), "story_system")
    assert (other["title"], other["included"]) == ("故事系统·第5章生效设定", True)


def test_the_story_system_section_says_why_it_is_out(filled):
    item = _item(build_memory_pack(book=filled, number=7, budget_tokens=8000), "story_system")
    assert item["included"] is False
    assert item["reason"] == (
        "未纳入：《青岚剑录》还没有故事系统总设定（题材、基调、节奏的约定；在后台「故事设定」里按题材描述生成）"
    )


def test_a_tight_budget_cuts_the_story_system_section_instead_of_dropping_it(story):
    pack = build_memory_pack(book=story, number=7, budget_tokens=800)
    item = _item(pack, "story_system")
    assert (item["included"], item["tokens"]) == (True, 133)
    assert item["reason"] == "截断后纳入：原 364 词元，保留 133（优先级 86）"
    assert "核心调性：先抑后扬" in pack["text"]  # the head (the fields) survives the cut


def test_a_young_book_is_too_young_to_judge_its_pacing(filled):
    pack = build_memory_pack(book=filled, number=4, budget_tokens=8000)
    block = pack["text"].split("【节奏信号】\n", 1)[1].split("\n【", 1)[0]
    assert block.splitlines()[0] == "前文仅 3 章，章数太少，暂不判断爽点节奏（满 10 章后给出）"
    assert "近 200 章" not in pack["text"] and "?/?" not in pack["text"]
    assert "最近情绪/位置：1压抑/推进 → 2小爽/推进 → 3铺垫/推进" in block


def test_chapters_without_mood_are_left_out_of_the_mood_line(filled):
    from core.models import Chapter

    Chapter.objects.filter(book=filled, number__in=[2, 3]).update(mood_position="", chapter_position="")
    block = build_memory_pack(book=filled, number=4, budget_tokens=8000)["text"].split("【节奏信号】\n", 1)[1]
    assert "最近情绪/位置：1压抑/推进\n" in block


@pytest.fixture
def demo(db, django_capture_on_commit_callbacks):
    if not (DEMO_BOOK / "book.yaml").is_file():
        pytest.skip("examples/demo-book is absent")
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book

    with django_capture_on_commit_callbacks(execute=True):
        book_rebuild(root=DEMO_BOOK)
    return Book.objects.get(slug="demo-book")


def test_demo_states_use_the_authors_labels_and_no_fact_is_empty(demo):
    pack = build_memory_pack(book=demo, number=25, budget_tokens=8000)
    text = pack["text"]
    assert (
        "【主角状态·林风（截至第24章）】\n势力：青岚宗；位置：雾海；持有物：断剑青岚、雾海图；境界：筑基初期；" in text
    )
    assert RAW_KEY.search(text) is None, RAW_KEY.search(text)
    # 王伯's wound was cleared in chapter 23: listed as skipped, never read as （无）
    wound = [i for i in pack["items"] if i["title"] == "角色事实·王伯·伤势（第23章）"]
    assert [(i["included"], i["reason"]) for i in wound] == [(False, "空值，未采用")]
    assert "（无）" not in text
    # settings come from the book's files, not from a chapter 0
    assert "第0章" not in text and "第0章" not in json.dumps(pack["items"], ensure_ascii=False)
    assert "【世界规则·境界·设定】\n炼气（九层）→ 筑基" in text
    assert "【当前约束·文风·基调·对话（设定）】" in text


def test_every_door_gives_the_same_faithful_pack(story, api, client):
    from tests.factories import user_make

    out = StringIO()
    call_command("story", "context", "mem", "7", "--budget-tokens", "8000", stdout=out)
    cli = json.loads(out.getvalue())
    rest = api.get("/api/books/mem/chapters/7/context?budget_tokens=8000").json()
    for pack in (cli, rest):
        assert _item(pack, "story_system")["included"] is True
        assert "本章节奏目标（本章）：本章慢节奏，埋伏笔" in pack["text"]
        assert RAW_KEY.search(pack["text"]) is None
    assert cli["text"] == rest["text"]
    client.force_login(user_make())
    page = client.get("/dashboard/mem/context/?chapter=7&budget=8000").content.decode()
    assert "故事系统·第7章生效设定（总设定＋本章覆盖）" in page and "本章节奏目标（本章）：本章慢节奏，埋伏笔" in page
