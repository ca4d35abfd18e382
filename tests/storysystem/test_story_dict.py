import pytest

from storysystem.markdown import story_markdown
from storysystem.selectors import reference_search
from storysystem.services import references_import
from storysystem.storydict import story_system_build

pytestmark = pytest.mark.django_db

OLD_STYLE = (
    "编号,适用技能,分类,层级,关键词,意图与同义词,适用题材,大模型指令,核心摘要,详细展开,反面写法,常见误区,反套路变种\n"
    "O-1,write,旧表,知识补充,铜镜,铜镜怎么写,全部,,,,镜子只当道具|镜中无人,照镜子发呆,镜子里的人先开口\n"
)


def test_structure_is_complete():
    data = story_system_build(query="玄幻退婚流")
    assert list(data) == [
        "meta",
        "route",
        "master_constraints",
        "base_context",
        "dynamic_context",
        "anti_patterns",
        "override_policy",
        "source_trace",
    ]
    meta = data["meta"]
    assert list(meta) == [
        "query",
        "explicit_genre",
        "inferred_genre",
        "chapter_mode",
        "chapter",
        "book",
        "generated_at",
        "library_version",
    ]
    assert (meta["query"], meta["explicit_genre"], meta["inferred_genre"], meta["chapter_mode"]) == (
        "玄幻退婚流",
        None,
        "玄幻退婚流",
        "master",
    )
    assert data["master_constraints"] == {
        "核心调性": "先抑后扬",
        "节奏策略": "前三章压到谷底，第三章末给第一次有效反击",
        "主冲突模板": "被轻视的主角以约定之日为期证明自己",
        "金手指硬限制": ["金手指每次变强都要付出代价或等待冷却"],
        "主角硬约束": ["翻盘必须来自主角自己的选择与付出", "主角不向羞辱者低头求和"],
        "全局毒点": ["反击没有铺垫", "打脸收尾太软", "配角替主角出头"],
    }
    # Ours, then seed 003 §10.4's field sets.
    assert data["override_policy"] == {
        "locked": [
            "核心调性",
            "主冲突模板",
            "金手指硬限制",
            "主角硬约束",
            "主路由题材",
            "主角底层人设",
            "世界规则闭环",
            "全局毒点",
            "节奏策略",
        ],
        "append_only": ["命名语系", "长线伏笔", "长线关系提醒", "全局禁区补充"],
        "override_allowed": ["本章桥段", "本章场景", "本章节奏目标", "本章局部情绪侧重", "本章输出重点"],
    }
    assert data["source_trace"][0] == {
        "kind": "route",
        "code": "S-GR-001",
        "table": "题材与调性推理",
        "library": "seed",
        "score": 24.0,
        # the seed's source trace quotes each entry's 核心摘要 and 大模型指令 (issue 31)
        "摘要": "退婚流的追读来自被踩后的长线兑现，而不是当场翻盘。",
        "指令": "开局把羞辱落到实处，反击延后兑现，每次兑现都要比上一次更重。",
    }
    base = [t for t in data["source_trace"] if t["kind"] == "base"]
    assert base[0] == {
        "kind": "base",
        "code": "S-NR-001",
        "table": "命名规则",
        "library": "seed",
        "score": base[0]["score"],
        "摘要": "玄幻角色名要带古意，并让主要角色彼此读音区分明显。",
        "指令": "人名要有古意和辨识度，主要角色的名字读音互不相近。",
    }
    assert base[0]["score"] > 0
    assert data["base_context"]["命名规则"][0]["summary"] == base[0]["摘要"]


def test_explicit_genre_is_recorded_in_meta():
    data = story_system_build(query="甜一点", genre="现言")
    assert (data["meta"]["explicit_genre"], data["meta"]["inferred_genre"], data["route"]["method"]) == (
        "现言",
        "现言",
        "explicit",
    )
    assert data["master_constraints"]["核心调性"] == "细腻克制，甜中带刺"


def test_anti_patterns_are_aggregated_from_every_table_with_their_source():
    data = story_system_build(query="玄幻退婚流")
    items = [(a["text"], a["source_table"], a["source_code"]) for a in data["anti_patterns"]]
    assert len(items) == 25
    assert items[:3] == [
        ("反击没有铺垫", "题材与调性推理", "S-GR-001"),
        ("打脸收尾太软", "题材与调性推理", "S-GR-001"),
        ("配角替主角出头", "题材与调性推理", "S-GR-001"),
    ]
    assert ("打脸节奏缺最后一拍补刀", "爽点与节奏", "S-PA-002") in items
    assert ("战力通货膨胀", "金手指与设定", "S-SY-001") in items
    sources = {a["source_table"] for a in data["anti_patterns"]}
    assert sources == {"题材与调性推理", "命名规则", "人设与关系", "金手指与设定", "桥段套路", "爽点与节奏", "场景写法"}
    # 反套路变种 of S-TR-001 is never an anti-pattern
    assert "主角先一步写下退婚书，主动切断关系" not in {a["text"] for a in data["anti_patterns"]}


def test_duplicate_anti_patterns_are_merged_keeping_the_first_source():
    data = story_system_build(query="玄幻退婚流", add_anti_patterns=["打脸收尾太软", "主角圣母心泛滥"])
    texts = [a["text"] for a in data["anti_patterns"]]
    assert texts.count("打脸收尾太软") == 1
    assert data["anti_patterns"][-1] == {
        "text": "主角圣母心泛滥",
        "source_table": "作者",
        "source_code": "作者",
        "field": "作者追加",
    }


def test_author_overrides_on_the_master():
    data = story_system_build(query="玄幻退婚流", overrides={"主角硬约束": "主角不杀降者|主角护短"})
    assert data["master_constraints"]["主角硬约束"] == ["主角不杀降者", "主角护短"]
    assert data["source_trace"][-1] == {
        "kind": "constraint",
        "field": "主角硬约束",
        "source_code": "作者",
        "source_table": "作者",
    }


def test_unknown_override_field_is_refused():
    from kernel.exceptions import InvalidInput

    with pytest.raises(InvalidInput, match="未知的设定字段「文风」"):
        story_system_build(query="玄幻退婚流", overrides={"文风": "冷峻"})


def test_anti_pattern_field_map_accepts_old_column_names_and_is_configurable(tmp_path, settings):
    (tmp_path / "旧式表.csv").write_text(OLD_STYLE, encoding="utf-8")
    references_import(directory=tmp_path, library="old")
    hit = reference_search(query="铜镜", table="旧式表")["results"][0]
    assert [(a["text"], a["field"]) for a in hit["anti_patterns"]] == [
        ("镜子只当道具", "反面写法"),
        ("镜中无人", "反面写法"),
        ("照镜子发呆", "常见误区"),
    ]
    assert hit["fields"] == {"反套路变种": "镜子里的人先开口"}
    settings.STORY_SYSTEM = {"anti_pattern_fields": ["常见误区", "反套路变种"]}
    hit = reference_search(query="铜镜", table="旧式表")["results"][0]
    assert [(a["text"], a["field"]) for a in hit["anti_patterns"]] == [("照镜子发呆", "常见误区")]
    assert hit["fields"] == {"反面写法": "镜子只当道具|镜中无人", "反套路变种": "镜子里的人先开口"}


def test_markdown_projection_sections_and_anti_pattern_lines():
    text = story_markdown(story_system_build(query="玄幻退婚流"))
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Meta",
        "## Route",
        "## Master Constraints",
        "## Base Context",
        "## Dynamic Context",
        "## Anti-Patterns（绝对毒点，切勿触碰）",
        "## Override Policy",
        "## Source Trace",
    ]
    assert "- `打脸节奏缺最后一拍补刀`（来源：S-PA-002）" in text.splitlines()
    assert "- 核心调性：先抑后扬" in text.splitlines()
    assert "- 主角硬约束：翻盘必须来自主角自己的选择与付出；主角不向羞辱者低头求和" in text.splitlines()
