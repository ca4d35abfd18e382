"""Compaction: de-duplicate facts and cap each category, deterministically.

1. De-duplication: inside one group (category, subject, field), a fact repeating the value of the fact
   just before it (in chapter order) adds nothing: its evidence is merged into the earlier fact and it
   is deleted. Only a derived fact is ever the one deleted: book-wide facts (origin ``setting``) are
   derived again whenever their inputs change, and facts a person or an agent wrote (``manual``,
   ``import``) are theirs; contradicted and decided facts are left for the author.
2. Caps: when a category holds more facts than its cap, facts are dropped in this order until it fits —
   outdated (oldest chapter first), then tentative, then active ones (oldest first). Never dropped:
   contradicted facts, book-wide facts, and active world rules / open loops (those categories have no
   cap on active facts: losing one is exactly the failure this app exists to prevent).

Ties are broken by key, so the same facts always compact the same way. The keys of derived facts that
were merged or dropped are kept as tombstones, so deriving the same chapters again (a rebuild) does not
bring them back — compaction is not undone by the next update.
"""

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from core.models import Book
from kernel.bulk import rows_update
from memory.models import DerivationStamp, Fact, FactEvent, FactTombstone
from memory.resolver import value_normalize
from memory.services import events_insert, facts_delete, groups_resolve, setting_facts_state

DEFAULT_CAPS = {
    Fact.Category.STORY: 400,
    Fact.Category.CHARACTER: 1500,
    Fact.Category.WORLD_RULE: 300,
    Fact.Category.TIMELINE: 300,
    Fact.Category.OPEN_LOOP: 300,
    Fact.Category.READER_PROMISE: 200,
    Fact.Category.CONSTRAINT: 200,
}
PROTECTED = {Fact.Category.WORLD_RULE, Fact.Category.OPEN_LOOP}
MERGEABLE_ORIGINS = {Fact.Origin.DERIVED}  # the only facts de-duplication deletes (the later of two)


def caps_get() -> dict[str, int]:
    caps = {str(k): v for k, v in DEFAULT_CAPS.items()}
    caps.update(getattr(settings, "WEBNOVEL_MEMORY_CAPS", {}) or {})
    return caps


def merges_find(groups: Iterable[list[Any]]) -> list[tuple[Any, Any]]:
    """(kept, merged away) pairs of de-duplication (rule 1 above), in order: each group's facts come in
    chapter order, then key. Pure, over ``Fact`` rows or the in-memory facts of memory/batch.py."""
    out = []
    for facts in groups:
        if len(facts) < 2:
            continue
        keep = facts[0]
        for fact in facts[1:]:
            same = value_normalize(fact.value) == value_normalize(keep.value)
            frozen = {Fact.Status.CONTRADICTED} & {fact.status, keep.status} or fact.decided_at or keep.decided_at
            # A fact a person or an agent wrote (manual, imported) is never merged away: whether it would
            # otherwise go or stay by whether a later hook happened to compact its subject (a rebuild always does).
            if same and not frozen and fact.origin in MERGEABLE_ORIGINS:
                out.append((keep, fact))
                continue
            keep = fact
    return out


def evidence_merge(*, keep: Any, fact: Any) -> None:
    """The merged-away fact's evidence joins the kept fact's (in order, without repeats)."""
    keep.evidence = keep.evidence + [e for e in fact.evidence if e not in keep.evidence]


CAP_RANK = {Fact.Status.OUTDATED: 0, Fact.Status.TENTATIVE: 1, Fact.Status.ACTIVE: 2}


def cap_victims(facts: Iterable[Any], *, category: str, over: int) -> list[Any]:
    """The ``over`` facts of a category the cap drops (rule 2 above), from its facts (or only its
    candidates): never a contradicted or a book-wide fact, nor an active one of a protected category."""
    candidates = [
        f
        for f in facts
        if f.status != Fact.Status.CONTRADICTED
        and f.origin != Fact.Origin.SETTING
        and not (category in PROTECTED and f.status == Fact.Status.ACTIVE)
    ]
    return sorted(candidates, key=lambda f: (CAP_RANK.get(f.status, 3), f.source_chapter, f.key))[:over]


@transaction.atomic
def facts_compact(
    *, book: Book, caps: dict[str, int] | None = None, subjects: set[str] | None = None
) -> dict[str, int]:
    """De-duplicate and cap the book's facts; returns how many were merged and dropped.

    ``subjects`` limits the de-duplication to those subjects' groups (the after-chapter hook passes
    what it touched, so one chapter's update does not read every fact of the book); caps are checked
    with one count per category and only a category over its cap is read."""
    caps = caps or caps_get()
    fields = [
        "pk",
        "key",
        "category",
        "subject",
        "field",
        "value",
        "source_chapter",
        "status",
        "origin",
        "evidence",
        "decided_at",
    ]
    groups: dict[tuple[str, str, str], list[Fact]] = defaultdict(list)
    rows = Fact.objects.filter(book=book)
    if subjects is not None:
        rows = rows.filter(subject__in=sorted(subjects))
    for fact in rows.only(*fields).order_by("category", "subject", "field", "source_chapter", "key"):
        groups[(fact.category, fact.subject, fact.field)].append(fact)
    merged_away: list[int] = []
    tombstones: list[FactTombstone] = []
    touched: set[tuple[str, str, str]] = set()
    to_update: dict[int, Fact] = {}
    events: list[FactEvent] = []
    for keep, fact in merges_find(groups.values()):
        evidence_merge(keep=keep, fact=fact)
        to_update[keep.pk] = keep
        merged_away.append(fact.pk)
        if fact.origin == Fact.Origin.DERIVED:
            tombstones.append(FactTombstone(book=book, key=fact.key, reason="merged"))
        events.append(
            FactEvent(fact=keep, action="merged", chapter=fact.source_chapter, note=f"合并重复事实 {fact.key}")
        )
        touched.add((fact.category, fact.subject, fact.field))
    if merged_away:
        facts_delete(merged_away)
        now = timezone.now()
        rows_update(
            Fact,
            [{"pk": f.pk, "evidence": f.evidence, "updated_at": now} for f in to_update.values()],
            ["evidence", "updated_at"],
        )
        events_insert(events, at=now)
        groups_resolve(book=book, groups=touched)
    dropped = 0
    counts = dict(
        Fact.objects.filter(book=book)
        .order_by()
        .values_list("category")
        .annotate(n=Count("id"))
        .values_list("category", "n")
    )
    for category, cap in sorted(caps.items()):
        count = counts.get(category, 0)
        if cap is None or count <= cap:
            continue
        rows = Fact.objects.filter(book=book, category=category)
        candidates = rows.exclude(status=Fact.Status.CONTRADICTED).exclude(origin=Fact.Origin.SETTING)
        if category in PROTECTED:
            candidates = candidates.exclude(status=Fact.Status.ACTIVE)
        columns = ("id", "status", "source_chapter", "key", "category", "subject", "field", "origin")
        victims = cap_victims(candidates.values_list(*columns, named=True), category=category, over=count - cap)
        tombstones += [FactTombstone(book=book, key=v.key, reason="dropped") for v in victims if v.origin == "derived"]
        if victims:
            facts_delete([v.id for v in victims])
            dropped += len(victims)
            groups_resolve(book=book, groups={(v.category, v.subject, v.field) for v in victims})
    FactTombstone.objects.bulk_create(tombstones, batch_size=500, ignore_conflicts=True)
    if merged_away or dropped:
        # Our own writes: what the book-wide facts were derived from still holds (see facts_derive).
        DerivationStamp.objects.filter(book=book).update(facts=setting_facts_state(book=book))
    return {"merged": len(merged_away), "dropped": dropped}
