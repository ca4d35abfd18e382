"""The real server over stdio (``manage.py mcp --book …`` as a subprocess) driven by the SDK's own
client: every read is a tool and answers what REST answers on the demo book; the chapter loop's
writes; errors carry REST's status, message and details."""

import json
import re
from urllib.parse import quote

import pytest
from django.test import Client as DjangoClient

from agents.reads import interface_input_schema
from kernel.interfaces import interfaces_load
from tests.agents.conftest import stdio_session
from tests.conftest import DEMO_BOOK
from tests.core.test_interfaces_parity import SAMPLES

_PATH_PARAM = re.compile(r"{(\w+)}")
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def rest(demo):
    from core.services import apikey_create

    _, raw = apikey_create(name="rest", scope="write")
    return DjangoClient(HTTP_X_API_KEY=raw)


def rest_read(rest, name: str, values: dict) -> tuple[int, object]:
    """The REST answer of read ``name`` for ``values`` (status, body)."""
    method, template = interfaces_load()[name].rest.split(" ", 1)
    used = set(_PATH_PARAM.findall(template))
    path = _PATH_PARAM.sub(
        lambda m: "demo-book" if m.group(1) == "book" else quote(str(values[m.group(1)]), safe=""), template
    )
    resp = rest.get(path, {k: v for k, v in values.items() if k not in used})
    return resp.status_code, resp.json()


def mcp_answer(result) -> tuple[int, object]:
    text = result.content[0].text
    if result.is_error:
        body = json.loads(text)
        return body.pop("status"), body
    return 200, text


def typed(name: str, values: dict[str, str]) -> dict:
    """The CLI samples (strings) as JSON values of their declared types, as a model sends them."""
    kinds = {a.name: a.type for a in interfaces_load()[name].args}
    return {k: (v if kinds[k] is str else kinds[k](v)) for k, v in values.items()}


def test_every_read_is_listed_with_its_declared_schema(stdio, demo):
    tools = stdio.tools()
    registry = interfaces_load()
    assert set(registry) <= set(tools)
    assert {n: tools[n].input_schema for n in registry} == {n: interface_input_schema(s) for n, s in registry.items()}
    assert "extraction-ingest" in tools  # stdio serves the local author: writes included


def test_every_read_answers_as_rest_on_the_demo_book(stdio, rest):
    registry = interfaces_load()
    compared, carried = [], []
    for name, spec in sorted(registry.items()):
        values = typed(name, SAMPLES.get(name, {}))
        if any(a.required and a.name not in values for a in spec.args):
            continue
        result = stdio.call(name, values)  # the SDK client checks structured content against the output schema
        status, answer = mcp_answer(result)
        rest_status, rest_body = rest_read(rest, name, values)
        if status == 200 and not spec.text:
            answer = json.loads(answer)
            structured = result.structured_content
            assert (
                name,
                structured.get("result", structured)
                if spec.formats or spec.response.startswith("list[")
                else structured,
            ) == (name, answer)
            carried.append(name)
        assert (name, status, answer) == (name, rest_status, rest_body)
        compared.append(name)
    assert len(compared) == len(registry)
    assert len(carried) >= 40


def test_an_ambiguous_alias_is_rest_s_409_with_the_candidates(stdio, rest):
    status, body = mcp_answer(stdio.call("entity", {"ref": "白鹭"}))
    assert status == 409
    assert body["message"] == "别名歧义: '白鹭' 命中 2 个实体，请改用 id 或补充 type 属性"
    assert len(body["extra"]["candidates"]) == 2
    assert (status, body) == rest_read(rest, "entity", {"ref": "白鹭"})


def test_an_unknown_id_is_rest_s_404(stdio, rest):
    status, body = mcp_answer(stdio.call("thread", {"thread_id": "伏笔-999"}))
    assert (status, body["message"]) == (404, "线索 '伏笔-999' 不存在（《青岚剑录》）")
    assert (status, body) == rest_read(rest, "thread", {"thread_id": "伏笔-999"})


def test_bad_arguments_and_unknown_tools_are_tool_errors(stdio, demo):
    status, body = mcp_answer(stdio.call("chapter-tail", {"number": 3, "chars": "many"}))
    assert (status, body["message"]) == (422, "参数无效：chars（应为整数）")
    status, body = mcp_answer(stdio.call("no-such-tool"))
    assert (status, body["message"]) == (404, "没有这个工具：no-such-tool")
    # the server is still there after them
    assert mcp_answer(stdio.call("chapter-summary", {"number": 12}))[0] == 200


EXTRACTION = {
    "entities_appeared": [{"id": "linfeng", "type": "角色", "mentions": ["林风"], "confidence": 0.95}],
    "entities_new": [{"suggested_id": "shouyeren", "name": "守夜人", "type": "角色", "confidence": 0.3}],
    "state_changes": [{"entity_id": "linfeng", "field": "mood", "new": "警觉", "confidence": 0.9}],
}


def test_ingest_an_extraction_then_confirm_its_pending_item(stdio, rest):
    status, answer = mcp_answer(stdio.call("extraction-ingest", {"number": 7, "extraction": EXTRACTION}))
    assert status == 200
    report = json.loads(answer)
    assert (report["chapter"], report["pending"], report["adopted"]["state_changes"]) == (7, 1, 1)
    assert (
        json.loads(mcp_answer(stdio.call("extraction", {"number": 7}))[1])
        == rest_read(rest, "extraction", {"number": 7})[1]
    )
    pending = json.loads(mcp_answer(stdio.call("entity-pending"))[1])
    item = next(p for p in pending if p["chapter"] == 7 and p["payload"].get("name") == "守夜人")
    status, answer = mcp_answer(stdio.call("pending-confirm", {"pk": item["pk"]}))
    assert status == 200
    assert json.loads(answer) == {
        "pk": item["pk"],
        "kind": item["kind"],
        "entity": "shouyeren",
        "relationship": None,
        "status": None,
        "roster": None,
        "added": None,
        "note": None,
    }
    assert rest.get("/api/books/demo-book/entities/shouyeren").json()["canonical_name"] == "守夜人"
    status, body = mcp_answer(stdio.call("pending-confirm", {"pk": item["pk"]}))
    assert (status, body["message"]) == (409, f"待确认项 #{item['pk']} 已处理（已确认）")


def test_a_rejection_answers_the_note_it_stored(stdio, rest):
    assert mcp_answer(stdio.call("extraction-ingest", {"number": 9, "extraction": EXTRACTION}))[0] == 200
    pending = json.loads(mcp_answer(stdio.call("entity-pending"))[1])
    item = next(p for p in pending if p["chapter"] == 9 and p["payload"].get("name") == "守夜人")
    status, answer = mcp_answer(stdio.call("pending-reject", {"pk": item["pk"], "note": "路人，不必建档"}))
    assert (status, json.loads(answer)["note"], json.loads(answer)["status"]) == (200, "路人，不必建档", "rejected")
    rejected = rest.get("/api/books/demo-book/entities/pending", {"status": "rejected"}).json()
    assert [p["pk"] for p in rejected if p["pk"] == item["pk"]] == [item["pk"]]


def test_a_bad_extraction_names_the_path_and_writes_nothing(stdio, rest):
    before = rest_read(rest, "extraction", {"number": 8})
    bad = {
        "state_changes": [
            {"entity_id": "linfeng", "field": "realm", "new": "x"},
            {"entity_id": "linfeng", "field": "realm", "op": "multiply", "new": 2},
        ]
    }
    status, body = mcp_answer(stdio.call("extraction-ingest", {"number": 8, "extraction": bad}))
    assert status == 422
    assert body["extra"]["errors"][0]["field"] == "state_changes[1].op"
    assert "state_changes[1].op" in body["message"]
    rest_body = rest.post(
        "/api/books/demo-book/chapters/8/extraction", json.dumps(bad), content_type="application/json"
    ).json()
    assert body == rest_body
    assert rest_read(rest, "extraction", {"number": 8}) == before


def test_memory_fact_answers_as_the_rest_post(stdio, rest):
    fact = {"category": "world_rules", "subject": "雾海", "field": "潮汐", "value": "每月初一涨潮", "chapter": 5}
    status, answer = mcp_answer(stdio.call("memory-fact-add", fact))
    assert status == 200
    created = json.loads(answer)
    assert (created["subject"], created["value"], created["source_chapter"]) == ("雾海", "每月初一涨潮", 5)
    assert rest.get(f"/api/books/demo-book/memory/facts/{created['id']}").json()["fact"]["value"] == "每月初一涨潮"
    status, body = mcp_answer(stdio.call("memory-fact-add", {**fact, "category": "天气"}))
    rest_body = rest.post(
        "/api/books/demo-book/memory/facts", json.dumps({**fact, "category": "天气"}), content_type="application/json"
    )
    assert (status, body) == (rest_body.status_code, rest_body.json())


def test_finalize_a_chapter(stdio, demo):
    status, answer = mcp_answer(stdio.call("chapter-finalize", {"number": 3}))
    assert status == 200
    report = json.loads(answer)
    assert (report["ok"], report["book"], report["unchanged"]) == (True, "demo-book", ["定稿/正文/第1卷/第0003章.md"])
    status, body = mcp_answer(stdio.call("chapter-finalize", {"number": 0}))
    assert (status, body["message"]) == (422, "参数无效：number（应为 1…10,000,000 的整数，收到 0）")


def test_a_read_only_server_lists_and_accepts_no_writes(demo):
    with stdio_session("demo-book", "--read-only") as session:
        assert set(session.tools()) == set(interfaces_load()) | {"continuity-check"}  # it writes nothing
        status, body = mcp_answer(session.call("book-sync"))
        assert (status, body["message"]) == (
            403,
            "本 MCP 服务（stdio）以 --read-only 启动，只提供查询工具；要写入请去掉 --read-only 重新启动",
        )


def test_a_book_folder_is_rebuilt_at_the_first_call_not_at_start(transactional_db):
    from core.models import Book

    with stdio_session(str(DEMO_BOOK)) as session:
        assert "chapter" in session.tools()  # the handshake and the listing need no rebuild
        assert not Book.objects.filter(slug="demo-book").exists()
        status, answer = mcp_answer(session.call("report-stats"))
        assert (status, json.loads(answer)["chapters"]) == (200, 24)
        assert Book.objects.get(slug="demo-book").root == str(DEMO_BOOK.resolve())
        # known now: the next server of the folder syncs instead (nothing changed)
    with stdio_session(str(DEMO_BOOK)) as session:
        assert json.loads(mcp_answer(session.call("chapter", {"number": 1}))[1])["number"] == 1
