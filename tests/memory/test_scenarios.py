"""The issue's scenarios, each with exact values."""

import logging

from entities.models import Entity, StateChange
from memory.models import Fact, FactEvent
from memory.orchestrator import build_memory_pack
from memory.pipeline import memory_after_chapter
from memory.services import fact_decide, fact_observe, fact_revise
from threads.models import Thread


def realm_facts(book, subject="林风"):
    rows = Fact.objects.filter(book=book, category="character_facts", subject=subject, field="realm")
    return [(f.value, f.source_chapter, f.status) for f in rows.order_by("source_chapter", "key")]


def test_two_chapters_update_the_same_realm_latest_wins_old_kept_as_history(filled):
    assert realm_facts(filled) == [
        ("炼气三层", 0, "outdated"),
        ("炼气四层", 2, "outdated"),
        ("炼气五层", 4, "active"),
    ]
    latest = Fact.objects.get(book=filled, subject="林风", field="realm", status="active")
    second = Fact.objects.get(book=filled, subject="林风", field="realm", source_chapter=2)
    assert second.superseded_by_id == latest.pk
    assert second.evidence == [
        {
            "kind": "state_change",
            "chapter": 2,
            "entity": "linfeng",
            "field": "realm",
            "op": "set",
            "source": "extraction",
            "reason": "",
        }
    ]
    history = list(second.events.values_list("action", "old_status", "new_status", "note"))
    assert history == [
        ("created", "", "active", ""),
        ("status", "active", "outdated", "被第4章的新值取代"),
    ]
    pack = build_memory_pack(book=filled, number=7, task="write", budget_tokens=4000)
    hero = next(i for i in pack["items"] if i["id"] == "state:linfeng")
    assert hero["included"] is True
    assert "境界：炼气五层" in pack["text"]
    assert "境界：炼气四层" not in pack["text"] and "【角色事实·林风·境界" not in pack["text"]
    old = next(i for i in pack["items"] if i["id"] == f"fact:{second.key}")
    assert (old["included"], old["reason"]) == (False, "已过时：被第4章的新值取代")


def test_a_new_chapter_outdates_through_the_after_chapter_hook(filled):
    from tests.memory.conftest import chapter_make

    lin = Entity.objects.get(book=filled, entity_id="linfeng")
    chapter_make(filled, 7)
    StateChange.objects.create(book=filled, entity=lin, chapter=7, field="realm", op="set", new="筑基一层")
    memory_after_chapter(book=filled, numbers=[7], removed=[])
    assert realm_facts(filled)[-2:] == [("炼气五层", 4, "outdated"), ("筑基一层", 7, "active")]
    # deriving the same chapter again changes nothing
    before = Fact.objects.filter(book=filled).count()
    memory_after_chapter(book=filled, numbers=[7], removed=[])
    assert Fact.objects.filter(book=filled).count() == before


def test_a_thread_going_from_open_to_closed_closes_its_open_loop(filled):
    loop = Fact.objects.get(book=filled, category="open_loops", subject="伏笔-001")
    assert (loop.status, loop.closed_chapter) == ("active", None)
    thread = Thread.objects.get(book=filled, thread_id="伏笔-001")
    thread.status, thread.closed_chapter = "已收尾", 6
    thread.save()  # as the admin would (a file edit reaches it through the file's hash instead)
    memory_after_chapter(book=filled, numbers=[6], removed=[])
    loop.refresh_from_db()
    assert (loop.status, loop.closed_chapter) == ("outdated", 6)
    assert list(loop.events.values_list("action", "chapter", "note"))[-2:] == [
        ("closed", 6, "第6章收尾"),
        ("status", None, "已于第6章收尾"),
    ]
    promise = Fact.objects.get(book=filled, category="reader_promises", subject="伏笔-001")
    assert promise.status == "outdated"
    outcome = Fact.objects.get(book=filled, category="story_facts", subject="伏笔-001", field="结局")
    assert (outcome.value, outcome.source_chapter, outcome.status) == ("断剑之谜：第6章已收尾", 6, "active")
    # a pack for chapter 5 still sees the loop open; chapter 7's lists it as closed, skipped
    five = {i["id"]: i for i in build_memory_pack(book=filled, number=5, budget_tokens=4000)["items"]}
    assert five[f"fact:{loop.key}"]["included"] is True
    seven = {i["id"]: i for i in build_memory_pack(book=filled, number=7, budget_tokens=4000)["items"]}
    assert (seven[f"fact:{loop.key}"]["included"], seven[f"fact:{loop.key}"]["reason"]) == (
        False,
        "已过时：已于第6章收尾",
    )


def test_a_world_rule_revised_supersedes_and_links(filled):
    rule = Fact.objects.get(book=filled, category="world_rules", subject="剑冢")
    new = fact_revise(fact=rule, value="剑冢每十年开启一次，筑基弟子亦可进入。", number=5, reason="第5章剑老道破")
    rule.refresh_from_db()
    assert (rule.status, rule.superseded_by_id) == ("outdated", new.pk)
    assert (new.status, new.revises_id, new.source_chapter) == ("active", rule.pk, 5)
    assert new.evidence == [{"kind": "revision", "of": rule.key, "reason": "第5章剑老道破", "chapter": 5}]
    assert list(rule.events.values_list("action", "note")) == [
        ("created", ""),
        ("revised", "第5章剑老道破"),
        ("status", "被第5章的修订取代"),
    ]
    text = build_memory_pack(book=filled, number=7, budget_tokens=4000)["text"]
    assert "剑冢每十年开启一次" in text
    assert "剑冢每百年开启一次" not in text
    # the book-wide derivation keeps the revised rule outdated (the link survives a refresh)
    memory_after_chapter(book=filled, numbers=[6], removed=[])
    rule.refresh_from_db()
    assert rule.status == "outdated"


def test_same_chapter_contradiction_surfaces_in_the_admin_and_is_decided_there(filled, admin_client):
    su = Entity.objects.get(book=filled, entity_id="suqing")
    StateChange.objects.create(
        book=filled, entity=su, chapter=5, field="realm", op="set", new="筑基一层", source="extraction"
    )
    StateChange.objects.create(book=filled, entity=su, chapter=5, field="realm", op="set", new="炼气九层", source="tag")
    memory_after_chapter(book=filled, numbers=[5], removed=[])
    assert realm_facts(filled, "苏晴") == [
        ("炼气五层", 0, "outdated"),
        ("炼气九层", 5, "contradicted"),
        ("筑基一层", 5, "contradicted"),
    ]
    page = admin_client.get("/admin/memory/fact/?status__exact=contradicted").content.decode()
    assert "炼气九层" in page and "筑基一层" in page and "炼气五层" not in page
    keep = Fact.objects.get(book=filled, subject="苏晴", field="realm", value="筑基一层")
    response = admin_client.post(
        "/admin/memory/fact/", {"action": "decide", "_selected_action": [keep.pk]}, follow=True
    )
    assert "已裁决 1 条事实" in response.content.decode()
    assert realm_facts(filled, "苏晴") == [
        ("炼气五层", 0, "outdated"),
        ("炼气九层", 5, "outdated"),
        ("筑基一层", 5, "active"),
    ]
    assert FactEvent.objects.filter(fact=keep, action="decided").count() == 1


def test_contradiction_from_two_observations_of_one_chapter(book):
    a = fact_observe(book=book, category="character_facts", subject="萧炎", field="realm", value="斗者", number=12)
    b = fact_observe(book=book, category="character_facts", subject="萧炎", field="realm", value="斗师", number=12)
    a.refresh_from_db()
    assert (a.status, b.status) == ("contradicted", "contradicted")
    fact_decide(fact=b)
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.status, b.status, a.superseded_by_id) == ("outdated", "active", b.pk)


def test_low_confidence_fact_is_tentative(book):
    fact = fact_observe(
        book=book, category="story_facts", subject="剑老", field="身份", value="开派祖师", number=3, confidence=0.3
    )
    assert fact.status == "tentative"


def test_a_scratchpad_failure_does_not_block_ingestion(filled, monkeypatch, caplog, django_capture_on_commit_callbacks):
    from entities.services.ingest import extraction_ingest
    from tests.memory.conftest import chapter_make

    def broken(**kwargs):
        raise RuntimeError("scratchpad exploded")

    monkeypatch.setattr("memory.pipeline.facts_derive", broken)
    chapter_make(filled, 7)
    payload = {
        "state_changes": [
            {"entity_id": "linfeng", "field": "realm", "old": "炼气五层", "new": "炼气六层", "confidence": 0.95}
        ]
    }
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
        result = extraction_ingest(book=filled, number=7, payload=payload)
    assert result["adopted"]["state_changes"] == 1
    assert (
        StateChange.objects.filter(book=filled, chapter=7, field="realm").values_list("new", flat=True)[0] == "炼气六层"
    )
    assert any("memory_after_chapter failed" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    # …and in the answer, not only in the log: the extraction is saved, the memory did not follow
    [failure] = result["hook_failures"]
    assert failure["hook"] == "memory.pipeline.memory_after_chapter"
    assert (
        "RuntimeError: scratchpad exploded" in failure["message"]
        and "memory_health mem --refresh" in failure["message"]
    )
    # the memory simply did not move
    assert realm_facts(filled)[-1] == ("炼气五层", 4, "active")


def test_ingestion_updates_the_memory_through_the_hook(filled, django_capture_on_commit_callbacks):
    from entities.services.ingest import extraction_ingest
    from tests.memory.conftest import chapter_make

    chapter_make(filled, 7)
    payload = {
        "state_changes": [
            {"entity_id": "linfeng", "field": "realm", "old": "炼气五层", "new": "炼气六层", "confidence": 0.95}
        ],
        "chapter_meta": {"location": "剑冢"},
    }
    with django_capture_on_commit_callbacks(execute=True):
        extraction_ingest(book=filled, number=7, payload=payload)
    assert realm_facts(filled)[-2:] == [("炼气五层", 4, "outdated"), ("炼气六层", 7, "active")]
    meta = Fact.objects.get(book=filled, subject="章节元数据", field="location")
    assert (meta.value, meta.source_chapter, meta.status) == ("剑冢", 7, "active")


def test_a_pack_under_a_tight_budget_lists_what_it_skipped_and_why(filled):
    pack = build_memory_pack(book=filled, number=7, task="write", budget_tokens=200)
    assert pack["used_tokens"] <= 200
    included = [(i["id"], i["tokens"]) for i in pack["items"] if i["included"]]
    assert included == [
        ("outline:v1:s3", 38),
        ("fact:s-6c56877a908f71e9", 39),
        ("state:linfeng", 37),
        ("tail:6", 60),
        ("state:jianlao", 23),
    ]
    assert pack["used_tokens"] == 197
    by_id = {i["id"]: i for i in pack["items"]}
    assert by_id["tail:6"]["reason"] == "截断后纳入：原 303 词元，保留 60（优先级 90）"
    assert by_id["summary:6"] == {
        "id": "summary:6",
        "layer": "working",
        "kind": "summary",
        "title": "第6章摘要 第6回",
        "priority": 89,
        "tokens": 31,
        "included": False,
        "reason": "预算不足：需要 31 词元，剩余 26（优先级 89）",
    }
    skipped = [i for i in pack["items"] if not i["included"]]
    assert len(skipped) == pack["counts"]["skipped"] and all(i["reason"] for i in skipped)


def test_a_loop_closed_by_hand_stays_closed_after_the_next_update(filled):
    from memory.services import fact_close

    loop = Fact.objects.get(book=filled, category="open_loops", subject="伏笔-001")
    fact_close(fact=loop, number=5, reason="作者确认已回收")
    memory_after_chapter(book=filled, numbers=[6], removed=[])
    loop.refresh_from_db()
    assert (loop.status, loop.closed_chapter) == ("outdated", 5)
    assert list(loop.events.values_list("action", "note"))[-2:] == [
        ("author_closed", "作者确认已回收"),
        ("status", "已于第5章收尾"),
    ]
