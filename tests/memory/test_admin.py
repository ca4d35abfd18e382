"""The memory admin shows the code-written string columns in the authors' words (display only)."""

import re

import pytest

from memory.models import FactTombstone, MemoryHit
from memory.services import fact_decide, fact_observe
from tests.factories import book_populated_make, user_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator(client):
    client.force_login(user_make())
    return client


def _cells(html: str, css: str) -> list[str]:
    return re.findall(rf'<td class="field-{css}">([^<]*)</td>', html)


def test_memory_hit_task_and_mode_read_in_chinese(curator):
    book = book_populated_make()
    for chapter, task, mode in ((3, "write", "full"), (4, "review", "simple"), (5, "query", "full")):
        MemoryHit.objects.create(
            book=book, chapter=chapter, task=task, mode=mode, budget_tokens=4000, used_tokens=100, items=[]
        )
    html = curator.get("/admin/memory/memoryhit/").content.decode()
    assert _cells(html, "task_name") == ["查询", "审阅", "写作"]  # newest chapter first
    assert _cells(html, "mode_name") == ["完整", "简易（不用记忆）", "完整"]
    filters = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html[html.index('id="changelist-filter"') :]))
    assert "以 任务" in filters and "审阅" in filters and "简易（不用记忆）" in filters
    assert "review" not in filters
    filtered = curator.get("/admin/memory/memoryhit/?task=review").content.decode()
    assert _cells(filtered, "task_name") == ["审阅"]
    hit = MemoryHit.objects.get(task="review")
    change = curator.get(f"/admin/memory/memoryhit/{hit.pk}/change/").content.decode()
    assert '<div class="readonly">审阅</div>' in change


def test_fact_events_and_tombstones_read_in_chinese(curator):
    book = book_populated_make()
    a = fact_observe(book=book, category="story_facts", subject="王伯", field="身世", value="北境遗孤", number=5)
    fact_observe(book=book, category="story_facts", subject="王伯", field="身世", value="南疆旧部", number=5)
    a.refresh_from_db()
    fact_decide(fact=a, note="采纳")
    html = curator.get(f"/admin/memory/fact/{a.pk}/change/").content.decode()
    actions = re.findall(r'<td class="field-action_name">\s*<p>([^<]*)</p>', html)
    assert actions[0] == "创建" and "裁决" in actions
    assert re.findall(r'<td class="field-new_status_name">\s*<p>([^<]*)</p>', html)[0] == "有效"
    FactTombstone.objects.create(book=book, key="k1", reason="merged")
    listing = curator.get("/admin/memory/facttombstone/").content.decode()
    assert _cells(listing, "reason_name") == ["合并重复"]


def test_a_fact_is_closed_in_the_admin_through_the_journal_never_deleted(curator, tmp_path):
    from core.journal import journal_events
    from memory.models import Fact

    book = book_populated_make()
    book.root = str(tmp_path)
    book.save(update_fields=["root"])
    fact = fact_observe(book=book, category="story_facts", subject="王伯", field="伤势", value="左臂", number=3)
    listing = curator.get("/admin/memory/fact/").content.decode()
    assert 'value="outdate"' in listing and 'value="delete_selected"' not in listing
    assert curator.get(f"/admin/memory/fact/{fact.pk}/delete/").status_code == 403
    response = curator.post("/admin/memory/fact/", {"action": "outdate", "_selected_action": [fact.pk]})
    assert response.status_code == 302
    fact.refresh_from_db()
    latest = book.chapters.order_by("-number").values_list("number", flat=True).first()
    assert (fact.status, fact.closed_chapter) == (Fact.Status.OUTDATED, max(latest, 3))
    assert [e["op"] for e in journal_events(root=tmp_path)] == ["memory.fact.observe", "memory.fact.close"]
