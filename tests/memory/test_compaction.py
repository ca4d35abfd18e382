"""Compaction: de-duplication and caps, deterministic, never dropping active world rules or open loops."""

from memory.compaction import facts_compact
from memory.models import Fact
from memory.services import fact_observe


def test_a_repeated_value_is_merged_into_the_earlier_fact(book):
    first = fact_observe(
        origin="derived",
        book=book,
        category="story_facts",
        subject="青岚宗",
        field="宗主",
        value="云鹤真人",
        number=1,
        evidence=[{"kind": "chapter_summary", "chapter": 1}],
    )
    fact_observe(
        book=book,
        category="story_facts",
        subject="青岚宗",
        field="宗主",
        value="云鹤真人",
        number=5,
        evidence=[{"kind": "chapter_summary", "chapter": 5}],
        origin="derived",
    )
    assert facts_compact(book=book) == {"merged": 1, "dropped": 0}
    rows = list(Fact.objects.filter(book=book, subject="青岚宗").values_list("source_chapter", "status"))
    assert rows == [(1, "active")]
    first.refresh_from_db()
    assert first.evidence == [{"kind": "chapter_summary", "chapter": 1}, {"kind": "chapter_summary", "chapter": 5}]
    assert list(first.events.values_list("action", flat=True)) == [
        "created",
        "merged",
    ]  # a derived fact: no status history


def test_a_fact_a_person_wrote_is_never_merged_away(book):
    """Issue 24's long run: a repeated manual fact went live or stayed by whether a later hook happened to
    compact its subject, while a rebuild's compaction always merged it (live ≠ rebuild)."""
    for chapter in (24, 19):
        fact_observe(book=book, category="open_loops", subject="雾海图", field="来历", value="幽冥殿", number=chapter)
    assert facts_compact(book=book) == {"merged": 0, "dropped": 0}
    rows = sorted(Fact.objects.filter(book=book, subject="雾海图").values_list("source_chapter", "origin"))
    assert rows == [(19, "manual"), (24, "manual")]


def test_caps_drop_outdated_first_and_never_active_rules_or_loops(filled):
    for n, value in enumerate(["甲", "乙", "丙"], start=1):
        fact_observe(book=filled, category="story_facts", subject="剑冢", field="守墓人", value=value, number=n)
    fact_observe(book=filled, category="story_facts", subject="藏经阁", field="位置", value="后山", number=2)
    before = Fact.objects.filter(book=filled, category="story_facts").count()
    assert before == 5  # 悬念-001's outcome (book-wide) + 剑冢 ×3 + 藏经阁
    caps = {"story_facts": 3, "world_rules": 1, "open_loops": 1}
    assert facts_compact(book=filled, caps=caps) == {"merged": 0, "dropped": 2}
    left = sorted(Fact.objects.filter(book=filled, category="story_facts").values_list("subject", "value", "status"))
    assert left == [
        ("剑冢", "丙", "active"),
        ("悬念-001", "外门弟子寻衅：第4章已收尾", "active"),
        ("藏经阁", "后山", "active"),
    ]
    assert Fact.objects.filter(book=filled, category="world_rules", status="active").count() == 2
    assert Fact.objects.filter(book=filled, category="open_loops", status="active").count() == 1
    # same facts, same result
    assert facts_compact(book=filled, caps=caps) == {"merged": 0, "dropped": 0}


def test_deriving_again_does_not_undo_compaction(filled, settings):
    from memory.models import FactTombstone
    from memory.pipeline import memory_refresh

    settings.WEBNOVEL_MEMORY_CAPS = {"reader_promises": 3}
    first = memory_refresh(book=filled)
    assert (first["dropped"], Fact.objects.filter(book=filled, category="reader_promises").count()) == (4, 3)
    assert FactTombstone.objects.filter(book=filled, reason="dropped").count() == 4
    again = memory_refresh(book=filled)
    assert (again["created"], again["deleted"], again["status_changes"], again["dropped"]) == (0, 0, 0, 0)
    hooks = sorted(
        Fact.objects.filter(book=filled, category="reader_promises").values_list("subject", "source_chapter", "status")
    )
    assert hooks == [("伏笔-001", 1, "active"), ("章末钩子", 5, "outdated"), ("章末钩子", 6, "active")]
