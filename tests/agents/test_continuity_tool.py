"""The draft check as an MCP tool, through the real stdio server: listed for a read-only server with
``readOnlyHint``, the answer of ``POST /api/books/{book}/continuity`` (with a read key), REST's 422s."""

import json

import pytest
from django.test import Client as DjangoClient

from tests.agents.conftest import stdio_session
from tests.agents.test_stdio import mcp_answer

pytestmark = pytest.mark.django_db(transaction=True)

# chapter 25 of the demo book: 赵乾 died (伏诛) in chapter 19 and speaks; 瞬间 is banned by its style file
DRAFT = "---\nchapter: 25\ntitle: 草稿\n---\n赵乾冷笑道：“你们谁也走不了。”\n林风瞬间拔剑。\n"


@pytest.fixture
def reader(demo):
    from core.services import apikey_create

    _, raw = apikey_create(name="reader", scope="read")
    return DjangoClient(HTTP_X_API_KEY=raw)


def test_a_read_only_server_lists_and_runs_the_check_as_rest_answers(reader):
    with stdio_session("demo-book", "--read-only") as session:
        tool = session.tools()["continuity-check"]
        assert tool.annotations.read_only_hint is True
        assert tool.input_schema["required"] == ["text"]
        assert set(tool.input_schema["properties"]) == {"text", "number"}
        status, answer = mcp_answer(session.call("continuity-check", {"text": DRAFT}))
        assert status == 200
        found = json.loads(answer)
        rest = reader.post("/api/books/demo-book/continuity", {"text": DRAFT}, content_type="application/json")
        assert rest.status_code == 200 and found == rest.json()
        assert (found["chapter"], found["as_of"]) == (25, 24)
        assert [(f["kind"], f["line"], f["term"]) for f in found["findings"]] == [
            ("inactive_acts", 5, "赵乾"),
            ("banned_word", 6, "瞬间"),
        ]
        assert found["findings"][0]["evidence"]["file"] == "定稿/正文/第2卷/第0019章.md"
        # number is REST's "chapter": checked as chapter 18, 赵乾 is alive
        status, answer = mcp_answer(session.call("continuity-check", {"text": DRAFT, "number": 18}))
        rest = reader.post(
            "/api/books/demo-book/continuity", {"text": DRAFT, "chapter": 18}, content_type="application/json"
        )
        assert status == 200 and json.loads(answer) == rest.json()
        assert [f["kind"] for f in json.loads(answer)["findings"]] == ["banned_word"]


def test_bad_input_is_rest_s_422(reader):
    with stdio_session("demo-book", "--read-only") as session:
        status, body = mcp_answer(session.call("continuity-check", {}))
        assert (status, body["message"]) == (422, "参数无效：text")
        status, body = mcp_answer(session.call("continuity-check", {"text": DRAFT, "chapter": 3}))
        assert (status, body["message"]) == (422, "未知参数：chapter（可用的参数：text、number）")
        status, body = mcp_answer(session.call("continuity-check", {"text": "---\nthreads: 5\n---\n正文"}))
        rest = reader.post(
            "/api/books/demo-book/continuity", {"text": "---\nthreads: 5\n---\n正文"}, content_type="application/json"
        )
        assert (status, body) == (422, rest.json())
        assert body["message"] == "草稿第2行：front matter 的 threads 应为 opens/advances/closes 映射，实际为 5"
        status, body = mcp_answer(session.call("continuity-check", {"text": DRAFT, "number": 0}))
        rest = reader.post(
            "/api/books/demo-book/continuity", {"text": DRAFT, "chapter": 0}, content_type="application/json"
        )
        assert (status, body) == (422, rest.json())
        assert body["message"] == "chapter 应为 1…10000000 的章节号，实际为 0"
