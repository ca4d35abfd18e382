import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from entities.models import PendingItem
from entities.services.ingest import extraction_ingest
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.django_db

PAYLOAD = {
    "entities_appeared": [{"id": "linfeng", "mentions": ["林风"], "confidence": 0.95}],
    "entities_new": [
        {"suggested_id": "zhaoyuan", "name": "赵元", "type": "角色", "aliases": ["赵师兄"], "confidence": 0.45}
    ],
    "state_changes": [
        {
            "entity_id": "小风",
            "field": "realm",
            "old": "炼气三层",
            "new": "炼气四层",
            "reason": "突破",
            "confidence": 0.7,
        }
    ],
    "relationships_new": [{"from": "jianlao", "to": "linfeng", "type": "师徒", "description": "收徒"}],
    "chapter_meta": {"hook": "危机钩"},
}


@pytest.fixture
def book():
    book = book_row_make(chapters=5)
    entity_make(
        book, "linfeng", "林风", aliases=["小风"], tier="核心", is_protagonist=True, base_state={"realm": "炼气三层"}
    )
    entity_make(book, "jianlao", "剑老", tier="重要")
    entity_make(book, "songzongzhu", "宋宗主", aliases=["宗主"])
    entity_make(book, "zhangzongzhu", "张宗主", aliases=["宗主"])
    return book


def _cli(*args) -> dict | list | str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    text = out.getvalue()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def test_rest_ingest_then_queries(api, book):
    resp = api.post(
        "/api/books/qinglan/chapters/3/extraction", data=json.dumps(PAYLOAD), content_type="application/json"
    )
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["adopted"]["state_changes"] == 1 and body["pending"] == 1
    assert body["warnings"] == [
        {"field": "state_changes[0]", "confidence": 0.7, "message": "状态变更 linfeng.realm 置信度 0.7，已采用，请复核"}
    ]
    detail = api.get("/api/books/qinglan/entities/小风", {"as_of": 2}).json()
    assert (detail["id"], detail["state"]) == ("linfeng", {"realm": "炼气三层"})
    assert api.get("/api/books/qinglan/entities/linfeng").json()["state"] == {"realm": "炼气四层"}
    changes = api.get("/api/books/qinglan/entities/linfeng/changes").json()["changes"]
    assert [(c["chapter"], c["old"], c["new"], c["confidence"]) for c in changes] == [(3, "炼气三层", "炼气四层", 0.7)]
    graph = api.get("/api/books/qinglan/entities/linfeng/graph", {"depth": 2}).json()
    assert graph["edges"][0]["type"] == "师徒"
    assert api.get("/api/books/qinglan/chapters/3/extraction").json()["chapter_meta"] == {"hook": "危机钩"}
    queue = api.get("/api/books/qinglan/entities/pending").json()
    assert [(p["kind"], p["confidence"]) for p in queue] == [("entity_new", 0.45)]
    confirmed = api.post(
        f"/api/books/qinglan/entities/pending/{queue[0]['pk']}/confirm", data="{}", content_type="application/json"
    )
    assert confirmed.json()["entity"] == "zhaoyuan"
    assert api.get("/api/books/qinglan/entities/赵师兄").json()["first_appearance"] == 3


def test_rest_errors_are_json_with_the_right_status(api, book):
    bad = api.post("/api/books/qinglan/chapters/3/extraction", data="{not json", content_type="application/json")
    assert bad.status_code == 422 and bad.json()["message"].startswith("抽取 JSON 无效（第 1 行第 2 列）")
    unknown = api.post(
        "/api/books/qinglan/chapters/3/extraction",
        data=json.dumps({"relationships_new": [{"from": "nobody", "to": "linfeng", "type": "敌"}]}),
        content_type="application/json",
    )
    assert unknown.status_code == 422
    assert unknown.json() == {
        "message": "relationships_new[0].from: 未知实体 'nobody'",
        "extra": {"field": "relationships_new[0].from", "ref": "nobody"},
    }
    ambiguous = api.get("/api/books/qinglan/entities/宗主")
    assert ambiguous.status_code == 409
    assert ambiguous.json()["message"] == "别名歧义: '宗主' 命中 2 个实体，请改用 id 或补充 type 属性"
    assert api.get("/api/books/qinglan/entities/nobody").status_code == 404
    assert api.get("/api/books/nobook/entities").status_code == 404


def test_cli_and_rest_give_the_same_answers(api, book, tmp_path):
    path = tmp_path / "ch3.json"
    path.write_text(json.dumps(PAYLOAD, ensure_ascii=False), encoding="utf-8")
    result = _cli("ingest", "qinglan", "3", str(path))
    assert result["adopted"]["relationships_new"] == 1
    pairs = [
        (("story", "entity", "qinglan", "小风", "--as-of", "2"), ("/api/books/qinglan/entities/小风", {"as_of": 2})),
        (("story", "entity-core", "qinglan"), ("/api/books/qinglan/entities/core", {})),
        (("story", "entity-by-alias", "qinglan", "宗主"), ("/api/books/qinglan/entities/by-alias", {"alias": "宗主"})),
        (("story", "entity-changes", "qinglan", "linfeng"), ("/api/books/qinglan/entities/linfeng/changes", {})),
        (
            ("story", "entity-relationships", "qinglan", "linfeng"),
            ("/api/books/qinglan/entities/linfeng/relationships", {}),
        ),
        (
            ("story", "entity-appearances", "qinglan", "linfeng"),
            ("/api/books/qinglan/entities/linfeng/appearances", {}),
        ),
        (("story", "entity-stats", "qinglan"), ("/api/books/qinglan/entities/stats", {})),
        (
            ("story", "entity-graph", "qinglan", "linfeng", "--depth", "2"),
            ("/api/books/qinglan/entities/linfeng/graph", {"depth": 2}),
        ),
        (("story", "entity-pending", "qinglan"), ("/api/books/qinglan/entities/pending", {})),
    ]
    for cli_args, (url, params) in pairs:
        assert _cli(*cli_args) == api.get(url, params).json(), cli_args
    core = _cli("story", "entity-core", "qinglan")
    assert [e["id"] for e in core] == ["linfeng"]
    by_alias = _cli("story", "entity-by-alias", "qinglan", "宗主")
    assert by_alias["ambiguous"] is True and [c["id"] for c in by_alias["candidates"]] == [
        "songzongzhu",
        "zhangzongzhu",
    ]


def test_cli_ingest_errors(book, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"state_changes": [{"entity_id": "宗主", "field": "x", "new": 1}]}', encoding="utf-8")
    with pytest.raises(CommandError, match="state_changes\\[0\\].entity_id: 别名歧义: '宗主' 命中 2 个实体"):
        _cli("ingest", "qinglan", "3", str(path))
    with pytest.raises(CommandError, match="无法读取"):
        _cli("ingest", "qinglan", "3", str(tmp_path / "missing.json"))
    assert PendingItem.objects.count() == 0


def test_merge_over_rest_moves_everything(api, book):
    extraction_ingest(book=book, number=3, payload=PAYLOAD)
    resp = api.post(
        "/api/books/qinglan/entities/merge",
        data=json.dumps({"source": "jianlao", "target": "linfeng"}),
        content_type="application/json",
    )
    assert resp.status_code == 200
    assert resp.json() == {
        "source": "jianlao",
        "target": "linfeng",
        "moved": {"aliases": 2, "appearances": 0, "state_changes": 0, "relationships": 0, "relationships_dropped": 1},
    }


def test_rest_reject_mermaid_and_reports(api, book):
    extraction_ingest(book=book, number=3, payload=PAYLOAD)
    pk = PendingItem.objects.get().pk
    resp = api.post(
        f"/api/books/qinglan/entities/pending/{pk}/reject",
        data='{"note": "不是新人物"}',
        content_type="application/json",
    )
    assert resp.json() == {
        "pk": pk,
        "kind": "entity_new",
        "entity": None,
        "relationship": None,
        "status": "rejected",
        "roster": None,
        "added": None,
        "note": "不是新人物",  # the note it stored
    }
    again = api.post(f"/api/books/qinglan/entities/pending/{pk}/reject", data="{}", content_type="application/json")
    assert (again.status_code, again.json()["message"]) == (409, f"待确认项 #{pk} 已处理（已拒绝）")
    again = api.post(f"/api/books/qinglan/entities/pending/{pk}/confirm", data="{}", content_type="application/json")
    assert (again.status_code, again.json()["message"]) == (409, f"待确认项 #{pk} 已处理（已拒绝）")
    assert (
        api.post(
            "/api/books/qinglan/entities/pending/999/confirm", data="{}", content_type="application/json"
        ).status_code
        == 404
    )
    mermaid = api.get("/api/books/qinglan/entities/linfeng/graph/mermaid").json()
    assert mermaid == 'graph LR\n  n_linfeng["林风"]\n  n_jianlao["剑老"]\n  n_jianlao -->|"师徒"| n_linfeng'
    assert _cli("story", "entity-graph-mermaid", "qinglan", "linfeng").rstrip("\n") == mermaid
    assert api.get("/api/books/qinglan/entities/linfeng/graph", {"depth": 9}).status_code == 422
    assert api.get("/api/books/qinglan/entities/ambiguous-mentions").json() == []
    assert api.get("/api/books/qinglan/entities/tag-issues").json() == []
    stats = api.get("/api/books/qinglan/entities/stats").json()
    assert (stats["entities"], stats["ambiguous_aliases"], stats["pending"]) == (4, ["宗主"], {"rejected": 1})


def test_entity_list_pages_with_limit_and_offset_through_both_doors(api, book):
    everyone = [e["id"] for e in api.get("/api/books/qinglan/entities").json()]
    assert everyone == ["linfeng", "jianlao", "songzongzhu", "zhangzongzhu"]  # protagonist first, then by id
    page = api.get("/api/books/qinglan/entities?limit=2&offset=1").json()
    assert [e["id"] for e in page] == ["jianlao", "songzongzhu"]
    assert [e["id"] for e in api.get("/api/books/qinglan/entities?offset=3").json()] == ["zhangzongzhu"]
    assert api.get("/api/books/qinglan/entities?limit=2&offset=9").json() == []
    cli = _cli("story", "entity-list", "qinglan", "--limit", "2", "--offset", "1")
    assert cli == page
    bad = api.get("/api/books/qinglan/entities?limit=0")
    assert (bad.status_code, bad.json()["message"]) == (422, "limit 必须在 1 到 1000 之间（收到 0）")
    bad = api.get("/api/books/qinglan/entities?offset=-1")
    assert (bad.status_code, bad.json()["message"]) == (422, "offset 必须在 0 到 1000000 之间（收到 -1）")
    bad = api.get("/api/books/qinglan/entities?offset=9223372036854775808")  # past SQLite's 64 bits (fuzzer)
    assert (bad.status_code, bad.json()["message"]) == (
        422,
        "offset 必须在 0 到 1000000 之间（收到 9223372036854775808）",
    )
