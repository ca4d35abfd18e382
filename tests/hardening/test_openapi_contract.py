"""The OpenAPI schema tells the truth: what schemathesis (bench/bench_schemathesis.py) found against
the live server, pinned down in-process.

- two response schemas with one name (core ``SearchOut`` vs story-system ``SearchOut``, core
  ``AliasOut`` vs entities ``AliasOut``) overwrote each other in ``components``: ``/search`` and
  ``/aliases/resolve`` were documented with another endpoint's fields;
- only the 200 was documented, never the JSON errors every endpoint answers;
- ``{int:…}`` path converters made a non-numeric chapter (or an unknown path) Django's HTML 404 page;
- limits the selectors enforce (``chars`` 1–20000, ``type`` 伏笔/悬念/感情线…) were not in the schema;
- a query parameter given twice (``?status=a&status=b``) silently meant the last one;
- the extraction body was optional, and ``confidence: true`` / ``chapter: false`` were read as 1 / 0.
"""

import json
from urllib.parse import quote

import pytest

from bookfiles.rebuilder import book_rebuild
from tests.conftest import DEMO_BOOK

B = "/api/books/{book}"


@pytest.fixture(scope="module")
def spec() -> dict:
    from webnovel.api import api

    return api.get_openapi_schema()


@pytest.fixture
def demo(db):
    assert book_rebuild(root=DEMO_BOOK)["ok"] is True


def _component(spec: dict, path: str, method: str = "get", status: str = "200") -> dict:
    ref = spec["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]["$ref"]
    return spec["components"]["schemas"][ref.rsplit("/", 1)[-1]]


def _param(spec: dict, path: str, name: str) -> dict:
    return next(p for p in spec["paths"][path]["get"]["parameters"] if p["name"] == name)["schema"]


def test_response_schema_names_are_unique_across_apps():
    from ninja import Schema

    from core import schemas as core
    from entities import schemas as entities
    from memory import schemas as memory
    from storysystem import schemas as storysystem
    from threads import schemas as threads

    owners: dict[str, list[str]] = {}
    for module in (core, entities, threads, storysystem, memory):
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, Schema) and value.__module__ == module.__name__:
                owners.setdefault(name, []).append(module.__name__)
    assert {name: mods for name, mods in owners.items() if len(mods) > 1} == {}


def test_search_and_alias_resolve_are_documented_with_their_own_fields(spec):
    assert _component(spec, f"{B}/search")["required"] == ["query", "mode", "note", "total", "hits"]
    assert _component(spec, f"{B}/aliases/resolve")["required"] == ["alias", "id", "type", "canonical_name"]
    assert _component(spec, f"{B}/story-system/search")["required"] == [
        "query",
        "filters",
        "max_results",
        "total",
        "results",
    ]
    assert _component(spec, f"{B}/entities/by-alias")["title"] == "ByAliasOut"


def test_every_operation_documents_its_json_errors(spec):
    assert sorted(spec["paths"][f"{B}/chapters/{{number}}"]["get"]["responses"]) == [
        "200",
        "401",
        "403",
        "404",
        "409",
        "414",
        "422",
        "503",
    ]
    # 400 (not JSON / not UTF-8) and 413 (too large) concern a request body only.
    assert sorted(spec["paths"][f"{B}/memory/facts"]["post"]["responses"]) == [
        "201",
        "400",
        "401",
        "403",
        "404",
        "409",
        "413",
        "414",
        "422",
        "503",
    ]
    assert _component(spec, f"{B}/search", status="404") == {
        "description": "The body of every error answer: a message for the author and machine-readable details.",
        "properties": {"message": {"title": "Message", "type": "string"}, "extra": {"title": "Extra"}},
        "required": ["message", "extra"],
        "title": "ErrorOut",
        "type": "object",
    }
    # gunicorn answers a request line over 4094 bytes itself, with HTML: documented without a body.
    assert spec["paths"][f"{B}/search"]["get"]["responses"]["414"] == {
        "description": "URL 过长：gunicorn 拒绝超过 4094 字节的请求行（它的 HTML 页面，不经过本 API）"
    }
    undocumented = [
        f"{method.upper()} {path}"
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if not {"401", "403", "404", "409", "422"} <= set(operation["responses"])
    ]
    assert undocumented == []


@pytest.mark.parametrize(
    "url",
    [
        "/api/books/demo-book/chapters/abc",
        "/api/books/demo-book/chapters/abc/tail",
        "/api/books/demo-book/reports/thread-activity/null,null",
        "/api/books/demo-book/volumes/1.5/outline",
    ],
)
def test_a_non_numeric_path_number_is_a_json_422(demo, api, url):
    response = api.get(url)
    assert response.status_code == 422
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.json()["message"].startswith("参数无效：")


def test_a_non_numeric_pending_item_is_a_json_422(demo, api):
    response = api.post("/api/books/demo-book/entities/pending/x/reject", data="{}", content_type="application/json")
    assert response.status_code == 422
    assert response.json()["message"] == "参数无效：path.pk"


@pytest.mark.parametrize(
    "path",
    [
        "/api/books/demo-book/no/such/endpoint",
        "/api/books/a/b/chapters/1",  # a "/" inside the book parameter
        "/api/nothing",
    ],
)
def test_an_unknown_api_path_is_a_json_404(demo, api, path):
    response = api.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.json() == {"message": f"没有这个接口：GET {path}", "extra": {"path": path}}


def test_an_encoded_slash_in_the_book_is_a_json_404(demo, api):
    response = api.get(f"/api/books/{quote('a/b', safe='')}/chapters/1")
    assert response.status_code == 404
    assert response.json()["message"] == "没有这个接口：GET /api/books/a/b/chapters/1"


def test_limits_are_in_the_schema_and_the_messages_stay_chinese(demo, api, spec):
    assert _param(spec, f"{B}/chapters/{{number}}/tail", "chars") == {
        "default": 500,
        "maximum": 20000,
        "minimum": 1,
        "title": "Chars",
        "type": "integer",
    }
    assert _param(spec, f"{B}/threads", "type") == {
        "enum": ["伏笔", "悬念", "感情线"],
        "title": "Type",
        "type": "string",
    }
    assert _param(spec, f"{B}/search", "q") == {"maxLength": 200, "minLength": 1, "title": "Q", "type": "string"}
    assert _param(spec, f"{B}/entities/{{ref}}/graph", "as_of") == {
        "anyOf": [{"minimum": 0, "type": "integer"}, {"type": "null"}],
        "title": "As Of",
    }
    assert _param(spec, f"{B}/chapters/{{number}}/context", "task") == {
        "default": "write",
        "enum": ["write", "review", "query"],
        "title": "Task",
        "type": "string",
    }
    # Optional choices: a blank value is read as absent (``if status:``), so "" is admitted.
    assert _param(spec, f"{B}/memory/facts", "category")["anyOf"][0]["enum"][-2:] == ["active_constraints", ""]
    assert _param(spec, f"{B}/threads", "status") == {
        "anyOf": [{"enum": ["进行", "已收尾", "已放弃", ""], "type": "string"}, {"type": "null"}],
        "title": "Status",
    }
    # The selector, not pydantic, still checks: same message as before.
    response = api.get("/api/books/demo-book/chapters/1/tail", {"chars": 0})
    assert response.status_code == 422
    assert response.json() == {"message": "参数 chars 必须在 1 到 20000 之间（收到 0）", "extra": {"chars": 0}}
    response = api.get("/api/books/demo-book/threads", {"type": "伏笔", "status": ""})
    assert response.status_code == 200
    assert response.json() == api.get("/api/books/demo-book/threads", {"type": "伏笔"}).json()


def test_extraction_body_is_required_and_markdown_answers_are_documented(spec):
    body = spec["paths"][f"{B}/chapters/{{number}}/extraction"]["post"]["requestBody"]
    assert body["required"] is True
    for path in (f"{B}/story-system/master", f"{B}/story-system/chapters/{{number}}"):
        assert sorted(spec["paths"][path]["get"]["responses"]["200"]["content"]) == [
            "application/json",
            "text/markdown",
        ]


@pytest.mark.parametrize(
    ("field", "value"),
    [("chapter", False), ("chapter", "3"), ("confidence", True), ("confidence", "0.9")],
)
def test_a_fact_with_a_boolean_or_string_number_is_refused(demo, api, field, value):
    fact = {"category": "story_facts", "subject": "林风", "field": "境界", "value": "炼气四层", "chapter": 3}
    response = api.post(
        "/api/books/demo-book/memory/facts",
        data=json.dumps({**fact, field: value}, ensure_ascii=False),
        content_type="application/json",
    )
    assert response.status_code == 422
    assert response.json()["message"] == f"参数无效：body.payload.{field}"


def test_a_fact_with_integer_numbers_is_accepted(demo, api):
    fact = {"category": "story_facts", "subject": "林风", "field": "境界", "value": "炼气四层", "chapter": 3}
    response = api.post(
        "/api/books/demo-book/memory/facts",
        data=json.dumps({**fact, "confidence": 1}, ensure_ascii=False),
        content_type="application/json",
    )
    assert response.status_code == 201
    assert (response.json()["source_chapter"], response.json()["confidence"]) == (3, 1.0)


def test_a_repeated_query_parameter_is_refused(demo, api):
    response = api.get("/api/books/demo-book/characters?status=a&status=&q=1&q=2")
    assert response.status_code == 422
    assert response.json() == {
        "message": "参数重复：q、status（每个查询参数只能给一次）",
        "extra": {"parameters": ["q", "status"]},
    }
    assert api.get("/api/books/demo-book/characters?status=").status_code == 200


@pytest.mark.parametrize(
    ("body", "kind"),
    [("[null, null]", "数组"), ("null", "null"), ('"x"', "字符串"), ("3", "数字"), (" true", "布尔值")],
)
def test_a_body_that_is_not_a_json_object_is_refused(demo, api, body, kind):
    response = api.post("/api/books/demo-book/entities/pending/1/reject", data=body, content_type="application/json")
    assert response.status_code == 422
    assert response.json() == {"message": f"请求体必须是 JSON 对象（收到{kind}）", "extra": {"field": "body"}}


def test_a_body_that_is_not_json_still_names_line_and_column(demo, api):
    response = api.post("/api/books/demo-book/entities/pending/1/reject", data="[1,", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["extra"] == {"line": 1, "column": 4}
