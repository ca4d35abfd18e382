"""The memory page: facts by status (contradicted and tentative first) with their value chain,
evidence and source chapter, the curator's actions through memory's services, the hit log, the
health report."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from dashboard.views import retrieval_name
from memory.models import Fact, FactEvent
from memory.orchestrator import build_memory_pack
from memory.services import fact_observe, memory_hit_record
from tests.factories import book_populated_make, user_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def book():
    b = book_populated_make()
    # (the factory already holds two contradicted values of 林风's realm at chapter 12)
    # chapter 12 gives 苏晴 two realms: a contradiction; chapter 5 a low-confidence guess about 王伯
    character = {"book": b, "category": "character_facts", "subject": "苏晴", "field": "realm"}
    fact_observe(
        **character, value="炼气二层", number=3, evidence=[{"kind": "state_change", "chapter": 3, "entity": "suqing"}]
    )
    fact_observe(**character, value="炼气三层", number=12)
    fact_observe(**character, value="炼气四层", number=12)
    fact_observe(
        book=b, category="story_facts", subject="王伯", field="身世", value="北境遗孤", number=5, confidence=0.3
    )
    return b


@pytest.fixture
def curator(client):
    client.force_login(user_make())
    return client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _fact(subject: str, value: str) -> Fact:
    return Fact.objects.get(subject=subject, value=value)


def test_contradicted_and_tentative_come_first_with_their_chain(curator, book):
    html = curator.get("/dashboard/qinglan/memory/").content.decode()
    attention = html[html.index('id="attention"') : html.index('id="facts"')]
    statuses = re.findall(r'data-status="(\w+)"', attention)
    assert statuses == ["contradicted"] * 4 + ["tentative"]
    text = _text(attention)
    assert "苏晴 · 境界" in text  # the state key in the authors' word
    chain = re.search(r"苏晴 · 境界 炼气四层 .*?取值履历（3） (.*?) 采纳此值", text).group(1)
    assert chain.startswith("第3章 炼气二层 已过时 ")  # oldest first; the two chapter-12 values in key order
    assert sorted(chain.split(" 第12章 ")[1:]) == ["炼气三层 矛盾待裁决", "炼气四层 矛盾待裁决"]
    assert "置信度 0.30" in text
    assert "来源： 第5章《第5章标题》" in text
    assert '<dd data-stat="contradicted">4</dd>' in html


def test_evidence_reads_as_text(curator, book):
    html = curator.get("/dashboard/qinglan/memory/?status=outdated").content.decode()
    assert "状态变更 第3章 实体 suqing" in _text(html)


def test_confirm_a_contradiction_decides_it(curator, book):
    fact = _fact("苏晴", "炼气四层")
    resp = curator.post(f"/dashboard/qinglan/memory/{fact.key}/confirm/")
    assert resp.status_code == 302 and resp["Location"] == f"/dashboard/qinglan/memory/#fact-{fact.key}"
    assert _fact("苏晴", "炼气四层").status == "active"
    assert _fact("苏晴", "炼气三层").status == "outdated"
    assert FactEvent.objects.filter(fact=fact, action="decided").get().note == "仪表盘裁决（curator）"
    page = curator.get(resp["Location"]).content.decode()
    assert "已裁决：采纳「炼气四层」" in page


def test_confirm_a_tentative_fact_makes_it_active(curator, book):
    fact = _fact("王伯", "北境遗孤")
    curator.post(f"/dashboard/qinglan/memory/{fact.key}/confirm/")
    fact.refresh_from_db()
    assert (fact.status, fact.confidence) == ("active", 1.0)
    assert fact.evidence[-1] == {"kind": "curator", "chapter": 5, "reason": "仪表盘确认（curator）"}


def test_mark_outdated_closes_through_the_service(curator, book):
    fact = _fact("王伯", "北境遗孤")
    curator.post(f"/dashboard/qinglan/memory/{fact.key}/outdate/", {"chapter": "30"})
    fact.refresh_from_db()
    assert (fact.status, fact.closed_chapter) == ("outdated", 30)
    assert FactEvent.objects.filter(fact=fact, action="author_closed").get().note == "仪表盘标为过时（curator）"


def test_edit_revises_the_fact(curator, book):
    fact = _fact("苏晴", "炼气四层")
    resp = curator.post(
        f"/dashboard/qinglan/memory/{fact.key}/edit/", {"value": "筑基初期", "chapter": "20", "reason": "第20章突破"}
    )
    new = Fact.objects.get(value="筑基初期")
    assert (new.source_chapter, new.revises_id, new.status) == (20, fact.pk, "active")
    assert resp["Location"] == f"/dashboard/qinglan/memory/#fact-{new.key}"


def test_bad_input_is_a_chinese_message_not_a_500(curator, book):
    fact = _fact("苏晴", "炼气四层")
    resp = curator.post(f"/dashboard/qinglan/memory/{fact.key}/edit/", {"value": "x", "chapter": "abc"}, follow=True)
    assert resp.status_code == 200
    assert "章节号必须是整数，收到 &#x27;abc&#x27;" in resp.content.decode()
    resp = curator.post(f"/dashboard/qinglan/memory/{fact.key}/edit/", {"value": "x", "chapter": "1"}, follow=True)
    assert "修订章节（第1章）早于原事实的来源章节（第12章）" in resp.content.decode()
    active = _fact("苏晴", "炼气二层")
    resp = curator.post(f"/dashboard/qinglan/memory/{active.key}/confirm/", follow=True)
    assert "只有矛盾待裁决或存疑的事实需要确认" in resp.content.decode()
    assert curator.post("/dashboard/qinglan/memory/nope/confirm/").status_code == 404
    assert curator.post(f"/dashboard/qinglan/memory/{fact.key}/explode/", follow=True).status_code == 200


def test_actions_need_post_csrf_and_permission(client, book):
    fact = _fact("苏晴", "炼气四层")
    viewer = get_user_model().objects.create_user(username="viewer", password="x")
    viewer.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_book", "view_fact"], content_type__app_label__in=["webnovel", "memory"]
        )
    )
    client.force_login(viewer)
    html = client.get("/dashboard/qinglan/memory/").content.decode()
    assert "采纳此值" not in html  # no forms for a reader
    assert client.post(f"/dashboard/qinglan/memory/{fact.key}/confirm/").status_code == 403
    assert client.get(f"/dashboard/qinglan/memory/{fact.key}/confirm/").status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user_make("strict"))
    assert strict.post(f"/dashboard/qinglan/memory/{fact.key}/confirm/").status_code == 403
    assert _fact("苏晴", "炼气四层").status == "contradicted"


def test_hit_log_and_health(curator, book):
    memory_hit_record(book=book, pack=build_memory_pack(book=book, number=41, task="write", budget_tokens=4000))
    html = curator.get("/dashboard/qinglan/memory/").content.decode()
    hits = _text(html[html.index('id="hits"') :])
    assert "第41章 写作" in hits
    assert "完整" in hits and "full" not in hits and "bm25" not in hits.lower()  # the mode and method, named
    assert '<dd data-stat="hits">1</dd>' in html
    assert "逾期未决线索" in html


@pytest.fixture
def demo_memory(django_capture_on_commit_callbacks):
    """The demo book as demo_setup leaves it, its memory filled by the after-chapter hooks."""
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book
    from tests.conftest import DEMO_BOOK
    from webnovel.demo import demo_extractions_ingest

    with django_capture_on_commit_callbacks(execute=True):
        assert book_rebuild(root=DEMO_BOOK)["ok"]
        demo_extractions_ingest(book=Book.objects.get(slug="demo-book"))


def test_the_demo_facts_are_grouped_folded_paged_and_labelled(demo_memory, curator):
    html = curator.get("/dashboard/demo-book/memory/").content.decode()
    text = _text(html)
    assert "全部事实 157 条，第1–40条" in text
    # page 1: the 28 story facts whole, 12 of the 48 character facts; folded (no group open)
    groups = re.findall(r'<details class="fact-group" data-category="(\w+)"( open)?>', html)
    assert groups == [("story_facts", ""), ("character_facts", "")]
    assert "剧情事实 28 条" in text and "角色事实 本页 12 / 共 48 条" in text
    assert re.findall(r'<a href="\?page=(\d)#facts">', html) == ["2", "3", "4"]
    # the chapter_meta keys by their names: 爽点 / 钩子, never coolpoint / hook
    assert "章节元数据 · 爽点 四年废材第一次引气" in text and "章节元数据 · 钩子" in text
    assert "coolpoint" not in text and "hook" not in text
    page4 = _text(curator.get("/dashboard/demo-book/memory/?page=4").content.decode())
    assert "第121–157条" in page4
    # the evidence names the entity and the field as the author does
    # a search by the label finds the key's facts
    found = curator.get("/dashboard/demo-book/memory/?q=灵石").content.decode()
    assert '<details class="fact-group" data-category="character_facts" open>' in found
    assert "状态变更 第4章 实体 林风 字段 灵石 外门小比获胜的奖赏" in _text(found)
    assert "spirit_stones" not in found and "linfeng" not in _text(found)
    bad = curator.get("/dashboard/demo-book/memory/?category=weather")
    assert bad.status_code == 422 and "未知的事实类别 &#x27;weather&#x27;" in bad.content.decode()


def test_retrieval_methods_read_in_chinese():
    assert retrieval_name("bm25") == "关键词检索"
    assert retrieval_name("bm25（无查询文本）") == "关键词检索（无查询文本）"
    assert retrieval_name("embeddings") == "语义检索（向量）"
    assert retrieval_name("hybrid（BM25 + 向量，倒数排名融合）") == "关键词 + 语义融合"
    assert retrieval_name("bm25（嵌入失败，已回退：URLError）") == "关键词检索（语义检索失败，已回退）"
    assert retrieval_name("") == "—" and retrieval_name("别的") == "别的"
