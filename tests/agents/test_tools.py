"""The tool declarations, in process: generated from the read registry, the extraction schema, the
write tools' visibility. (The servers themselves are driven over their transports in test_stdio /
test_http.)"""

import json
from pathlib import Path

import pytest
from jsonschema.validators import validator_for
from pydantic import TypeAdapter

from agents.reads import (
    arg_json_schema,
    interface_arguments,
    interface_input_schema,
    interface_output_schema,
    interface_tool,
    schema_lean,
)
from agents.server import Access, tools_for
from agents.writes import write_tools
from entities.extraction_schema import extraction_json_schema, schema_undocumented
from entities.management.commands.extraction_schema import schema_text
from kernel.exceptions import InvalidInput
from kernel.interfaces import Arg, interfaces_load
from kernel.responses import response_union
from tests.conftest import REPO


def test_an_arg_becomes_json_schema_with_type_choices_default_and_help():
    arg = Arg("position", str, choices=("推进", "过渡"), default="推进", help="章节定位")
    assert arg_json_schema(arg) == {
        "type": "string",
        "enum": ["推进", "过渡"],
        "description": "章节定位",
        "default": "推进",
    }
    assert arg_json_schema(Arg("volume", int, many=True)) == {"type": "array", "items": {"type": "integer"}}
    assert arg_json_schema(Arg("include_archived", bool, default=False)) == {"type": "boolean", "default": False}


def test_bounds_on_an_arg_flow_into_the_schema():
    # The bounds of the read declaration are the agent's: the same keywords as the OpenAPI schema.
    assert arg_json_schema(Arg("chars", int, minimum=1, maximum=2000)) == {
        "type": "integer",
        "minimum": 1,
        "maximum": 2000,
    }
    assert arg_json_schema(Arg("q", str, min_length=1, max_length=200, choices=("a",))) == {
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "enum": ["a"],
    }


def test_every_read_of_the_registry_is_a_read_only_tool():
    registry = interfaces_load()
    tools = {t.name: t for t in tools_for(Access(book=lambda: None, write=False))}
    # and the one curated tool that writes nothing (it declares readOnlyHint)
    assert set(tools) == set(registry) | {"continuity-check"}
    assert tools["continuity-check"].annotations.read_only_hint is True
    chapter_tail = tools["chapter-tail"]
    assert chapter_tail.input_schema["required"] == ["number"]
    assert chapter_tail.input_schema["properties"]["chars"]["default"] == 500
    assert chapter_tail.annotations.read_only_hint is True
    assert "REST `GET /api/books/{book}/chapters/{number}/tail`" in chapter_tail.description
    assert all(tools[name].input_schema == interface_input_schema(spec) for name, spec in registry.items())


def test_a_write_key_also_sees_the_curated_writes():
    names = {t.name for t in tools_for(Access(book=lambda: None, write=True))}
    assert names - set(interfaces_load()) == {
        "chapter-finalize",
        "book-sync",
        "extraction-ingest",
        "pending-confirm",
        "pending-reject",
        "memory-fact-add",
        "story-system-build",
        "continuity-check",
    }


def test_arguments_are_checked_against_the_declaration():
    spec = interfaces_load()["chapter-list"]
    assert interface_arguments(spec, {"volume": "2"}) == {"position": None, "volume": 2}
    with pytest.raises(InvalidInput) as bad:
        interface_arguments(spec, {"position": "高潮"})
    assert bad.value.message == "参数无效：position（应为 推进 | 过渡 | 日常 之一，收到 '高潮'）"
    with pytest.raises(InvalidInput) as unknown:
        interface_arguments(spec, {"chapter": 3})
    assert unknown.value.message == "未知参数：chapter（chapter-list 可用的参数：position、volume）"
    with pytest.raises(InvalidInput) as missing:
        interface_arguments(interfaces_load()["chapter"], {})
    assert missing.value.extra == {"errors": [{"field": "number", "error": "缺少此参数"}]}


def test_the_extraction_schema_documents_every_field_and_is_the_ingest_input():
    schema = extraction_json_schema()
    assert schema_undocumented(schema) == []
    assert schema["properties"]["state_changes"]["items"] == {"$ref": "#/$defs/StateChangeIn"}
    assert schema["$defs"]["StateChangeIn"]["properties"]["op"]["enum"] == ["set", "unset", "add", "remove", "inc"]
    assert schema["$defs"]["RelationshipIn"]["required"] == ["from", "to", "type"]  # the JSON key, not from_
    ingest = write_tools()["extraction-ingest"].tool()["inputSchema"]
    assert ingest["required"] == ["number", "extraction"]
    assert ingest["$defs"] == schema["$defs"]
    assert ingest["properties"]["extraction"]["properties"] == schema["properties"]


def test_docs_extraction_schema_file_is_current():
    # Regenerate with: python manage.py extraction_schema --write
    assert (Path(REPO) / "docs" / "extraction.schema.json").read_text(encoding="utf-8") == schema_text()
    assert json.loads(schema_text())["title"] == "抽取结果（一章）"


def test_rest_serves_the_extraction_schema(api):
    from core.models import Book

    Book.objects.create(slug="s", root="/nonexistent")
    resp = api.get("/api/books/s/extraction-schema")
    assert resp.status_code == 200
    assert resp.json() == extraction_json_schema()
    assert api.get("/api/books/nobook/extraction-schema").json()["message"] == "书籍 'nobook' 不存在"


def test_tool_descriptions_say_what_when_and_what_comes_back():
    tool = interface_tool(interfaces_load()["thread-overdue"])
    assert tool["description"].startswith(interfaces_load()["thread-overdue"].help)
    assert "用于安排伏笔、悬念、感情线的推进或收尾时" in tool["description"]
    assert "返回 JSON" in tool["description"]


def _undescribed(tool) -> list[str]:
    return [name for name, prop in tool.input_schema.get("properties", {}).items() if not prop.get("description")]


def test_every_parameter_of_every_tool_is_described():
    tools = tools_for(Access(book=lambda: None, write=True))
    assert len(tools) == len(interfaces_load()) + 8
    assert {t.name: _undescribed(t) for t in tools if _undescribed(t)} == {}


def test_reads_carry_their_declared_response_as_output_schema():
    registry = interfaces_load()
    tools = {t.name: t for t in tools_for(Access(book=lambda: None, write=False))}
    carrying = sorted(name for name in registry if tools[name].output_schema is not None)
    declared = sorted(name for name, spec in registry.items() if spec.response and not spec.text)
    assert carrying == declared and len(carrying) >= 40
    assert all(tools[name].output_schema["type"] == "object" for name in carrying)
    # An object answer is described as it is, a list is wrapped as {"result": [...]}, as the SDK does.
    thread = tools["thread"].output_schema
    assert {"id", "title", "status"} <= set(thread["properties"])
    overdue = tools["entity-pending"].output_schema
    assert overdue["required"] == ["result"] and overdue["properties"]["result"]["type"] == "array"
    # A read that `format` may render as text answers either its object or a string.
    master = tools["story-system-master"].output_schema["properties"]["result"]["anyOf"]
    assert {"type": "string"} in master and len(master) == 2
    assert all(tools[name].output_schema is None for name, spec in registry.items() if spec.text)


def test_output_schemas_are_lean_and_accept_what_the_declared_response_accepts():
    # Every host's client checks each answer against the output schema: no $ref to look up, and pydantic's
    # `X | None` as a type list — the same constraint, so the same answers pass and fail.
    registry = interfaces_load()
    overdue = interface_output_schema(registry["thread-overdue"])
    assert "$ref" not in json.dumps(overdue) and "$defs" not in overdue
    row = overdue["properties"]["threads"]["items"]
    assert row["properties"]["last_activity_chapter"] == {"type": ["integer", "null"], "title": "Last Activity Chapter"}
    assert row["properties"]["title"] == {"title": "Title", "type": "string"}  # a property named "title" stays
    full = TypeAdapter(response_union(registry["thread-overdue"].response)).json_schema(mode="serialization")
    good = {"id": "F1", "type": "伏笔", "title": "甲", "strength": "强", "last_activity_chapter": None, "hang": 9}
    good |= {"threshold": 5, "planned_end_chapter": 3, "past_planned_end": True, "overdue_reason": "", "over_by": 4}
    answers = [
        {"current_chapter": 9, "threads": [good]},
        {"current_chapter": None, "threads": []},
        {"current_chapter": "9", "threads": []},
        {"current_chapter": 9, "threads": [{**good, "last_activity_chapter": "3"}]},
        {"current_chapter": 9, "threads": [{k: v for k, v in good.items() if k != "hang"}]},
        {"current_chapter": 9, "threads": [{**good, "hang": None}]},
    ]
    lean, declared = validator_for(overdue)(overdue), validator_for(full)(full)
    assert [lean.is_valid(a) for a in answers] == [declared.is_valid(a) for a in answers]
    assert [lean.is_valid(a) for a in answers] == [True, True, False, False, False, False]
    # A definition that refers to itself stays a $ref, with its definition.
    node = {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/Node"}}}}
    assert schema_lean(
        {"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": node}}
    ) == {
        "type": "object",
        "properties": {"root": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/Node"}}}}},
        "$defs": {"Node": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/Node"}}}}},
    }
