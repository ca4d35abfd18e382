"""A whole-book derivation into a book without facts is decided in memory (memory/fresh_derivation.py):
it must leave exactly what the step-by-step path (derive every chapter, then compact) leaves."""

from entities.models import Entity, Extraction, Relationship, RelationshipEvent, StateChange
from memory.compaction import facts_compact
from memory.derivation import facts_derive
from memory.models import DerivationStamp, Fact, FactTombstone
from memory.pipeline import memory_refresh

CAPS = {
    "story_facts": 2,
    "character_facts": 4,
    "reader_promises": 2,
    "timeline": 1,
    "open_loops": 1,
    "world_rules": 1,
    "active_constraints": 2,
}


def _repeats(book) -> None:
    """Values repeated over chapters (merged by compaction) and two sources disagreeing in a chapter."""
    for n in (2, 3, 5):
        Extraction.objects.create(book=book, chapter=n, chapter_meta={"地点": "青岚宗外门"})
    lin, su = Entity.objects.get(book=book, entity_id="linfeng"), Entity.objects.get(book=book, entity_id="suqing")
    rel = Relationship.objects.create(book=book, from_entity=lin, to_entity=su, type="同门", chapter=3)
    for n in (3, 4, 6):
        RelationshipEvent.objects.create(relationship=rel, chapter=n, description="同入剑冢")
    StateChange.objects.create(book=book, entity=su, chapter=5, field="realm", op="set", new="炼气六层", source="a")
    StateChange.objects.create(book=book, entity=su, chapter=5, field="realm", op="set", new="炼气七层", source="b")


def _memory(book) -> dict:
    keys = dict(Fact.objects.filter(book=book).values_list("pk", "key"))
    facts = [
        (*row[:-1], keys.get(row[-1]))
        for row in Fact.objects.filter(book=book)
        .order_by("pk")
        .values_list(
            "key",
            "category",
            "subject",
            "field",
            "value",
            "status",
            "source_chapter",
            "evidence",
            "confidence",
            "origin",
            "entity_ref",
            "closed_chapter",
            "superseded_by_id",
        )
    ]
    events = {
        key: list(
            Fact.objects.get(book=book, key=key).events.values_list(
                "action", "old_status", "new_status", "chapter", "note"
            )
        )
        for key in keys.values()
    }
    tombstones = list(FactTombstone.objects.filter(book=book).order_by("pk").values_list("key", "reason"))
    return {"facts": facts, "events": events, "tombstones": tombstones}


def test_a_fresh_book_keeps_what_derivation_then_compaction_keep(book, settings):
    settings.WEBNOVEL_MEMORY_CAPS = CAPS
    _repeats(book)
    assert not Fact.objects.filter(book=book).exists()
    fresh = memory_refresh(book=book)
    decided = _memory(book)

    Fact.objects.filter(book=book).delete()
    FactTombstone.objects.filter(book=book).delete()
    DerivationStamp.objects.filter(book=book).delete()
    numbers = sorted(book.chapters.values_list("number", flat=True))
    derived = facts_derive(book=book, chapters=numbers, full=True)
    compacted = facts_compact(book=book)

    assert _memory(book) == decided
    assert {k: v for k, v in fresh.items() if k not in ("chapters", "chunks")} == {**derived, **compacted}
    # the case is not empty: repeats merged, caps dropped, a contradiction kept
    assert (fresh["created"], fresh["merged"], fresh["dropped"]) == (32, 4, 12)
    assert [f[5] for f in decided["facts"] if f[2] == "苏晴" and f[3] == "realm"].count("contradicted") == 2
    assert sorted({r for _, r in decided["tombstones"]}) == ["dropped", "merged"]
