"""Issue 31: ``base_context`` keyed by table and ``source_trace`` quoting 摘要 / 指令, as the seed writes
them, through the CLI, REST (and its OpenAPI schema), MCP's output schema and the Markdown projection."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from agents.reads import interface_output_schema
from kernel.interfaces import interfaces_load
from storysystem.markdown import story_markdown
from storysystem.models import StorySetting
from storysystem.selectors import chapter_effective
from storysystem.services import story_chapter_build, story_master_build
from storysystem.storydict import story_system_build

pytestmark = pytest.mark.django_db

BASE = "/api/books/tuihun/story-system"
GR_001 = {
    "kind": "route",
    "code": "S-GR-001",
    "table": "题材与调性推理",
    "library": "seed",
    "score": 24.0,
    "摘要": "退婚流的追读来自被踩后的长线兑现，而不是当场翻盘。",
    "指令": "开局把羞辱落到实处，反击延后兑现，每次兑现都要比上一次更重。",
}
BASE_CODES = {"命名规则": ["S-NR-001"], "人设与关系": ["S-CH-001"], "金手指与设定": ["S-SY-001"]}


def _codes(base_context):
    return {table: [item["code"] for item in items] for table, items in base_context.items()}


def test_the_master_through_rest_and_the_cli(api, book, capsys):
    body = api.post(f"{BASE}/build", {"query": "玄幻退婚流"}, content_type="application/json").json()
    master = api.get(f"{BASE}/master").json()
    assert master == body["story_system"]
    assert _codes(master["base_context"]) == BASE_CODES
    assert master["source_trace"][0] == GR_001
    quoted = {t["code"]: t["摘要"] for t in master["source_trace"] if t["kind"] == "base"}
    assert quoted["S-CH-001"] == "退婚方的轻视要出自现实的利益算计，而不是无缘无故的恶意。"
    out = StringIO()
    call_command("story", "story-system-master", "tuihun", stdout=out)
    assert json.loads(out.getvalue()) == master


def test_a_chapter_and_its_effective_setting_carry_the_masters_keyed_base(book):
    story_master_build(book=book, query="玄幻退婚流", persist=False)  # a dry run stores nothing
    assert not StorySetting.objects.filter(book=book).exists()
    story_master_build(book=book, query="玄幻退婚流", persist=True)
    chapter, _ = story_chapter_build(book=book, number=3, query="退婚打脸", persist=True)
    assert _codes(chapter["base_context"]) == BASE_CODES
    master_items = [t for t in chapter["source_trace"] if t["kind"] == "master"]
    assert master_items[0] == GR_001 | {"kind": "master"}
    assert master_items[1]["code"] == "S-NR-001"
    assert master_items[1]["指令"] == "人名要有古意和辨识度，主要角色的名字读音互不相近。"
    # the chapter's dynamic context never repeats a base entry
    base = {code for codes in BASE_CODES.values() for code in codes}
    assert not base & {item["code"] for item in chapter["dynamic_context"]}
    assert _codes(chapter_effective(book=book, number=3)["base_context"]) == BASE_CODES


def test_a_master_stored_with_a_list_is_keyed_on_read(book):
    story_master_build(book=book, query="玄幻退婚流", persist=True)
    setting = StorySetting.objects.get(book=book, chapter__isnull=True)
    keyed = setting.data["base_context"]
    setting.data["base_context"] = [item for items in keyed.values() for item in items]  # the old form
    setting.save()
    assert _codes(chapter_effective(book=book, number=2)["base_context"]) == BASE_CODES
    chapter, _ = story_chapter_build(book=book, number=2, query="退婚打脸", persist=False)
    assert _codes(chapter["base_context"]) == BASE_CODES


def test_the_schemas_say_keyed_by_table(client, db):
    spec = client.get("/api/openapi.json").json()["components"]["schemas"]["StorySystemOut"]["properties"]
    assert spec["base_context"]["type"] == "object"
    assert spec["base_context"]["additionalProperties"]["type"] == "array"
    tool = interface_output_schema(interfaces_load()["story-system-master"])
    answer = tool["properties"]["result"]["anyOf"][0] if "result" in tool["properties"] else tool
    schema = answer if "properties" in answer else tool["$defs"][answer["$ref"].rsplit("/", 1)[1]]
    assert schema["properties"]["base_context"]["type"] == "object"


def test_the_markdown_trace_quotes_the_entries():
    lines = story_markdown(story_system_build(query="玄幻退婚流")).splitlines()
    assert (
        "- route：S-GR-001（题材与调性推理，seed，得分 24.0）；摘要：退婚流的追读来自被踩后的长线兑现，而不是当场翻盘。"
        "；指令：开局把羞辱落到实处，反击延后兑现，每次兑现都要比上一次更重。"
    ) in lines
    assert "### 金手指与设定 · S-SY-001" in lines  # the keyed base context still lists each entry
