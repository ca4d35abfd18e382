"""The front doors: the context read, the hit log, REST, the story registry, admin, import / export, health."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.models import Fact, MemoryHit
from memory.orchestrator import build_memory_pack, context_hit_record
from memory.services import fact_observe, scratchpad_import

PLUGIN_FILE = {
    "story_facts": [
        {
            "id": "sf_001",
            "category": "story_facts",
            "subject": "青岚宗",
            "field": "宗主",
            "value": "林啸天",
            "status": "active",
            "source_chapter": 2,
            "evidence": ["第2章摘要"],
            "confidence": 0.9,
            "updated_at": "2025-01-01T00:00:00",
        }
    ],
    "character_facts": [
        {
            "id": "cf_001",
            "subject": "苏晴",
            "field": "心结",
            "value": "师门旧怨",
            "status": "tentative",
            "source_chapter": 3,
            "confidence": 0.8,
        },
        {
            "id": "cf_002",
            "subject": "林风",
            "field": "心法",
            "value": "青岚诀",
            "status": "active",
            "source_chapter": 1,
        },
        {
            "id": "cf_003",
            "subject": "林风",
            "field": "心法",
            "value": "太虚剑经",
            "status": "active",
            "source_chapter": 5,
        },
    ],
    "world_rules": [],
    "timeline": [],
    "open_loops": [],
    "reader_promises": [],
    "active_constraints": [],
}


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_story_context_json_and_text_write_nothing(filled):
    pack = json.loads(run("story", "context", "mem", "7", "--budget-tokens", "500"))
    assert pack == build_memory_pack(book=filled, number=7, budget_tokens=500)
    text = run("story", "context", "mem", "7", "--budget-tokens", "500", "--task", "review", "--format", "text")
    assert text.startswith("# 上下文包：mem 第7章（review，full）\n# 预算 500 tokens")
    assert "# 候选条目" in text
    assert MemoryHit.objects.filter(book=filled).count() == 0  # a read has no side effect


def test_the_hit_log_is_written_by_the_explicit_call(filled, api):
    answer = api.post(
        "/api/books/mem/chapters/7/context/hits", {"budget_tokens": 500}, content_type="application/json"
    ).json()
    pack = build_memory_pack(book=filled, number=7, budget_tokens=500)
    hit = MemoryHit.objects.get(book=filled, chapter=7, task="write")
    included = [i["id"] for i in pack["items"] if i["included"]]
    assert answer == {
        "chapter": 7,
        "task": "write",
        "recorded": True,
        "items": len(included),
        "used_tokens": pack["used_tokens"],
    }
    assert (hit.budget_tokens, hit.used_tokens) == (500, pack["used_tokens"])
    assert hit.items == included
    assert hit.facts.count() == sum(1 for i in included if i.startswith("fact:"))


def test_an_unchanged_pack_is_not_logged_again_within_a_minute(filled, django_assert_num_queries):
    import datetime

    from memory.services import memory_hit_record

    pack = build_memory_pack(book=filled, number=7, budget_tokens=500)
    first = memory_hit_record(book=filled, pack=pack)
    with django_assert_num_queries(2):  # read the row and its facts; no write
        again = memory_hit_record(book=filled, pack=pack)
    assert (again.pk, again.built_at) == (first.pk, first.built_at)
    MemoryHit.objects.filter(pk=first.pk).update(built_at=first.built_at - datetime.timedelta(minutes=2))
    refreshed = memory_hit_record(book=filled, pack=pack)  # over a minute old: written, built_at moves
    assert refreshed.pk == first.pk and refreshed.built_at > first.built_at
    other = build_memory_pack(book=filled, number=7, budget_tokens=300)
    changed = memory_hit_record(book=filled, pack=other)  # a different pack: written at once
    assert (changed.pk, changed.budget_tokens) == (first.pk, 300)
    assert MemoryHit.objects.get(pk=first.pk).items == [i["id"] for i in other["items"] if i["included"]]


def test_story_context_diff_and_errors(filled):
    diff = json.loads(run("story", "context-diff", "mem", "3", "7", "--budget-tokens", "4000"))
    assert (diff["a"]["chapter"], diff["b"]["chapter"]) == (3, 7)
    assert any(c["id"] == "state:linfeng" for c in diff["changed"])
    with pytest.raises(CommandError, match="书籍 'nope' 不存在"):
        run("story", "context", "nope", "7")
    with pytest.raises(CommandError, match="预算必须在"):
        run("story", "context", "mem", "7", "--budget-tokens", "5")


def test_story_registry_and_rest_give_the_same_pack(filled, api):
    cli = json.loads(run("story", "context", "mem", "7", "--budget-tokens", "600"))
    rest = api.get("/api/books/mem/chapters/7/context?budget_tokens=600")
    assert rest.status_code == 200
    assert rest.json() == cli
    assert MemoryHit.objects.filter(book=filled, chapter=7).count() == 0


def test_rest_context_text_and_errors(filled, api):
    text = api.get("/api/books/mem/chapters/7/context?budget_tokens=600&format=text").json()
    assert text.startswith("# 上下文包：mem 第7章（write，full）")
    bad = api.get("/api/books/mem/chapters/7/context?task=plan")
    assert bad.status_code == 422
    assert bad.json()["message"] == "未知的任务 'plan'，可选：write、review、query"
    assert api.get("/api/books/nope/chapters/7/context").status_code == 404
    diff = api.get("/api/books/mem/context/diff?a=3&b=7&budget_tokens=4000").json()
    assert diff["b"]["chapter"] == 7


def test_rest_facts_observe_revise_close_decide(filled, api):
    listed = api.get("/api/books/mem/memory/facts?category=world_rules").json()
    assert [(f["subject"], f["status"]) for f in listed] == [("修炼境界", "active"), ("剑冢", "active")]
    rule = listed[1]["id"]
    revised = api.post(
        f"/api/books/mem/memory/facts/{rule}/revise",
        {"value": "剑冢十年一开。", "chapter": 5, "reason": "设定调整"},
        content_type="application/json",
    )
    assert revised.status_code == 201
    assert (revised.json()["revises"], revised.json()["status"]) == (rule, "active")
    detail = api.get(f"/api/books/mem/memory/facts/{rule}").json()
    assert detail["fact"]["status"] == "outdated"
    assert [v["value"] for v in detail["values"]] == ["剑冢每百年开启一次，只容炼气弟子进入。", "剑冢十年一开。"]
    body = {"category": "character_facts", "subject": "剑老", "field": "身份", "value": "残魂", "chapter": 6}
    a = api.post("/api/books/mem/memory/facts", body, content_type="application/json")
    b = api.post("/api/books/mem/memory/facts", {**body, "value": "祖师"}, content_type="application/json")
    assert (a.status_code, b.json()["status"]) == (201, "contradicted")
    decided = api.post(
        f"/api/books/mem/memory/facts/{b.json()['id']}/decide", {"note": "作者确认"}, content_type="application/json"
    )
    assert decided.json()["status"] == "active"
    again = api.post(f"/api/books/mem/memory/facts/{b.json()['id']}/decide", {}, content_type="application/json")
    assert again.status_code == 422
    loop = Fact.objects.get(book=filled, category="open_loops", subject="伏笔-001").key
    closed = api.post(f"/api/books/mem/memory/facts/{loop}/close", {"chapter": 6}, content_type="application/json")
    assert (closed.json()["status"], closed.json()["closed_chapter"]) == ("outdated", 6)
    bad = api.post("/api/books/mem/memory/facts", {**body, "category": "gossip"}, content_type="application/json")
    assert bad.status_code == 422
    assert api.get("/api/books/mem/memory/facts/nope").status_code == 404
    assert api.get("/api/books/mem/memory/facts?limit=-1").json()["message"] == "limit 必须在 1 到 2000 之间，收到 -1"


def test_health_report(filled, api):
    fact_observe(book=filled, category="active_constraints", subject="苏晴", field="location", value="内门", number=1)
    fact_observe(book=filled, category="character_facts", subject="剑老", field="身份", value="残魂", number=6)
    fact_observe(book=filled, category="character_facts", subject="剑老", field="身份", value="祖师", number=6)
    report = api.get("/api/books/mem/memory/health?chapter=45").json()
    assert [(o["thread"], o["reason"]) for o in report["open_loops_overdue"]] == [
        ("伏笔-001", "已超过计划收尾章（第40章）；已悬置 44 章（最后推进于第1章），超过阈值 30")
    ]
    assert sorted(c["value"] for c in report["contradicted"]) == ["残魂", "祖师"]
    assert [d["reason"] for d in report["constraints_drifted"]] == ["约束要求「内门」，但第3章之后为「外门」"]
    assert report["counts"]["world_rules"] == {"active": 2}
    assert json.loads(run("memory_health", "mem"))["chapter"] == 6


def test_hits_endpoint(filled, api):
    api.post("/api/books/mem/chapters/7/context/hits", {"budget_tokens": 600}, content_type="application/json")
    hits = api.get("/api/books/mem/memory/hits").json()
    assert [(h["chapter"], h["task"], h["budget_tokens"]) for h in hits] == [(7, "write", 600)]


def test_import_export_round_trip(book, api, tmp_path):
    path = tmp_path / "memory_scratchpad.json"
    path.write_text(json.dumps(PLUGIN_FILE, ensure_ascii=False), encoding="utf-8")
    first = json.loads(run("memory_import", "mem", str(path)))
    assert (first["created"], first["updated"], first["kept"], first["skipped"]) == (4, 0, [], [])
    assert json.loads(run("memory_import", "mem", str(path)))["updated"] == 4
    exported = api.get("/api/books/mem/memory/export").json()
    assert sorted(exported) == sorted([*PLUGIN_FILE, "meta"])
    meta = exported.pop("meta")  # issue 31: the seed's scratchpad meta
    assert (meta["version"], meta["compaction_count"], meta["facts"]) == (2, 0, 4)
    assert meta["updated_at"] == max(i["updated_at"] for bucket in exported.values() for i in bucket)
    items = {i["id"]: i for bucket in exported.values() for i in bucket}
    assert set(items) == {"sf_001", "cf_001", "cf_002", "cf_003"}
    assert (items["cf_002"]["status"], items["cf_003"]["status"]) == ("outdated", "active")
    assert items["cf_001"]["status"] == "tentative"
    assert items["sf_001"]["evidence"] == [{"kind": "note", "text": "第2章摘要"}]
    assert set(items["sf_001"]) == {
        "id",
        "category",
        "subject",
        "field",
        "value",
        "status",
        "source_chapter",
        "evidence",
        "confidence",
        "updated_at",
    }
    out = tmp_path / "out" / "memory_scratchpad.json"
    assert json.loads(run("memory_export", "mem", "--out", str(out)))["facts"] == 4
    again = json.loads(out.read_text(encoding="utf-8"))
    Fact.objects.filter(book=book).delete()
    assert scratchpad_import(book=book, data=again)["created"] == 4
    # a bucket we do not model is kept and reported, never a refusal of the whole file
    response = api.post("/api/books/mem/memory/import", {"gossip": [{}]}, content_type="application/json")
    assert (response.status_code, response.json()["kept"], response.json()["created"]) == (200, ["gossip"], 0)


def test_import_rejects_bad_files(book, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(CommandError, match="不是有效的 JSON"):
        run("memory_import", "mem", str(path))
    path.write_text(json.dumps({"story_facts": [{"id": "x", "subject": "a"}]}), encoding="utf-8")
    assert json.loads(run("memory_import", "mem", str(path)))["skipped"] == [
        {
            "item": "story_facts[0]",
            "reason": "缺少 subject、field 或 value（也认 entity / attribute / content 等同义键）",
        }
    ]


def test_admin_pages(filled, admin_client):
    context_hit_record(book=filled, number=7, budget_tokens=600)
    assert admin_client.get("/admin/memory/fact/").status_code == 200
    fact = Fact.objects.get(book=filled, subject="林风", field="realm", source_chapter=2)
    page = admin_client.get(f"/admin/memory/fact/{fact.pk}/change/").content.decode()
    assert "被第4章的新值取代" in page
    assert admin_client.get("/admin/memory/memoryhit/").status_code == 200
    hit = MemoryHit.objects.get(book=filled)
    assert "outline:v1:s3" in admin_client.get(f"/admin/memory/memoryhit/{hit.pk}/change/").content.decode()
    assert admin_client.get("/admin/memory/chunk/").status_code == 200
    assert admin_client.get("/admin/memory/facttombstone/").status_code == 200


def test_the_export_meta_counts_compacted_facts(book):
    from memory.models import FactTombstone
    from memory.selectors import scratchpad_meta

    assert scratchpad_meta(book=book) == {"version": 2, "updated_at": None, "compaction_count": 0, "facts": 0}
    FactTombstone.objects.create(book=book, key="d:1", reason="merged")
    FactTombstone.objects.create(book=book, key="d:2", reason="dropped")
    assert scratchpad_meta(book=book)["compaction_count"] == 2
