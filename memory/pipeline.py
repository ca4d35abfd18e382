"""The after-chapter pipeline of the memory app: derive facts (memory/derivation.py), index chunks
(memory/retrieval.py) and compact (memory/compaction.py) after a chapter's commit, or for the whole
book after a rebuild. ``memory_after_chapter`` is the after-chapter hook the memory app
registers in ``MemoryConfig.ready()`` (kernel/indexing.py).

It sits above the fact primitives (memory/services.py) and the three steps, which never import it."""

import bisect
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Min, Q

from core.models import Book
from entities.models import Entity, RelationshipEvent, StateChange
from memory.compaction import facts_compact
from memory.derivation import facts_derive
from memory.fresh_derivation import facts_derive_fresh
from memory.models import Chunk, Fact
from memory.retrieval import chunks_index
from memory.services import derivation_lock

GAPS_PROBED = 20  # more gaps than this between a book's chapter numbers: every chunk's chapter is read


def memory_orphans(*, book: Book) -> list[int]:
    """Chapters that still have retrieval chunks but no longer exist: their deletion was committed
    while the hook did not run to the end (killed, or failed before this fix). Every hook run treats
    them as removed, so a rerun of a sync that finds no changed file still catches up. Chunks, not
    facts, are the signal: chunks come from the chapter file alone, while a deleted chapter may keep
    facts derived from what outlives it (its ingested extraction, the timeline file's events).

    Such a chunk's chapter lies outside the book's chapter numbers or in a gap between them. Those
    ranges are probed on the chunks' (book, chapter, …) index, so a finalize of a book numbered without
    gaps pays two index probes and a count of its chapters, not a DISTINCT over every chunk (~30,000 at
    3,000 chapters: the finalize's one step still growing with the book)."""
    span = book.chapters.order_by().aggregate(low=Min("number"), high=Max("number"), count=Count("number"))
    chunks = Chunk.objects.filter(book=book).order_by()
    if not span["count"]:
        return sorted(set(chunks.values_list("chapter", flat=True).distinct()))
    low, high = span["low"], span["high"]
    gaps: list[tuple[int, int]] = []
    if high - low + 1 != span["count"]:  # numbers are unique per book: a gap somewhere
        present = sorted(book.chapters.order_by().values_list("number", flat=True))
        gaps = [(a, b) for a, b in zip(present, present[1:], strict=False) if b > a + 1]
        if len(gaps) > GAPS_PROBED:
            return sorted(set(chunks.values_list("chapter", flat=True).distinct()) - set(present))
    ranges = [Q(chapter__lt=low), Q(chapter__gt=high), *(Q(chapter__gt=a, chapter__lt=b) for a, b in gaps)]
    # one query per range: an OR of them reads every chunk of the book again (SQLite's plan)
    found: set[int] = set()
    for where in ranges:
        found.update(chunks.filter(where).values_list("chapter", flat=True).distinct())
    return sorted(found)


def _state_dependents(*, book: Book, chapters: set[int]) -> set[int]:
    """The later chapters whose state facts follow from a change of (entity, field) in ``chapters``:
    each of that pair's later chapters up to and including the next one that sets the field (after a
    ``set`` the value no longer depends on what came before). The pairs are those changed in
    ``chapters`` now and those their derived facts name (what the write may have removed or moved)."""
    low = min(chapters)
    pairs = set(StateChange.objects.filter(book=book, chapter__in=chapters).values_list("entity_id", "field"))
    named = set(
        Fact.objects.filter(book=book, origin=Fact.Origin.DERIVED, source_chapter__in=chapters)
        .exclude(entity_ref="")
        .values_list("entity_ref", "field")
    )
    if named:
        ids = dict(Entity.objects.filter(book=book, entity_id__in={r for r, _ in named}).values_list("entity_id", "pk"))
        pairs |= {(ids[r], f) for r, f in named if r in ids}
    out: set[int] = set()
    if not pairs:
        return out
    later = (
        StateChange.objects.filter(entity_id__in={p for p, _ in pairs}, chapter__gt=low)
        .order_by("entity_id", "field", "chapter")
        .values_list("entity_id", "field", "chapter", "op")
    )
    given = sorted(chapters)

    def active(barriers: list[int], number: int) -> bool:
        # a given chapter at or before ``chapter`` with no barrier (a set) strictly between them
        since = max((b for b in barriers if b < number), default=-1)
        i = bisect.bisect_right(given, since)
        return i < len(given) and given[i] <= number

    barriers: dict[tuple[int, str], list[int]] = {}
    for pk, field, chapter, op in later:
        key = (pk, field)
        if key not in pairs:
            continue
        seen = barriers.setdefault(key, [])
        if active(seen, chapter):
            out.add(chapter)
            if op == "set" and chapter not in chapters:
                seen.append(chapter)
    # the facts the pairs' entities hold at later chapters that no change backs any more (moved away)
    refs = dict(Entity.objects.filter(pk__in={p for p, _ in pairs}).values_list("entity_id", "pk"))
    for ref, field, chapter in Fact.objects.filter(
        book=book, origin=Fact.Origin.DERIVED, entity_ref__in=set(refs), source_chapter__gt=low
    ).values_list("entity_ref", "field", "source_chapter"):
        key = (refs[ref], field)
        if key in pairs and active(barriers.get(key, []), chapter):
            out.add(chapter)
    return out


def memory_dependents(*, book: Book, chapters: Iterable[int], entities: Iterable[str] = ()) -> set[int]:
    """The chapters whose derived facts may change when these chapters' inputs, or these entities as a
    whole, change: a state fact is the value after its chapter, the replay of every earlier change of
    the entity's field, so a change at chapter N moves its later state facts up to the next ``set``; an
    entity renamed or merged moves every fact that names it (its state, its relationships from or to
    it, its first appearance). Later chapters only (a new last chapter has none: finalize stays flat)."""
    chapters = set(chapters)
    out = set(chapters)
    if chapters:
        out |= _state_dependents(book=book, chapters=chapters)
    whole = set(Entity.objects.filter(book=book, entity_id__in=set(entities)).values_list("pk", flat=True))
    if whole:
        out |= set(StateChange.objects.filter(entity_id__in=whole).values_list("chapter", flat=True))
        out |= set(
            Fact.objects.filter(book=book, origin=Fact.Origin.DERIVED, entity_ref__in=set(entities)).values_list(
                "source_chapter", flat=True
            )
        )
        out |= set(
            RelationshipEvent.objects.filter(
                Q(relationship__from_entity_id__in=whole) | Q(relationship__to_entity_id__in=whole)
            ).values_list("chapter", flat=True)
        )
        out |= set(
            Entity.objects.filter(pk__in=whole, first_appearance__isnull=False).values_list(
                "first_appearance", flat=True
            )
        )
    # A first appearance moves with any rescan (an alias given to another entity re-attributes a
    # mention): the chapters whose 首次登场 facts no longer match the entities' first appearance.
    first = dict(Entity.objects.filter(book=book).values_list("entity_id", "first_appearance"))
    for ref, chapter in Fact.objects.filter(book=book, origin=Fact.Origin.DERIVED, field="首次登场").values_list(
        "entity_ref", "source_chapter"
    ):
        if first.get(ref) != chapter:
            out.add(chapter)
            out.add(first.get(ref))
    return {n for n in out if n is not None}


def memory_after_chapter(
    *,
    book: Book,
    numbers: list[int] | None,
    removed: list[int] | None = None,
    entities: list[str] | None = None,
    **_: Any,
) -> None:
    """The after-chapter hook (registered in MemoryConfig.ready()): derive facts, index chunks, compact.

    ``numbers=None`` means every chapter (a rebuild). The facts of the chapters that depend on
    ``numbers`` and ``entities`` are derived too (``memory_dependents``), so a write gives what a
    rebuild gives. It runs after the chapter's commit in its own transaction: a failure rolls back only
    the memory update and propagates to the hook runner (kernel/indexing.py), which keeps the chapter
    and reports the failure in the command's result."""
    with transaction.atomic():
        derivation_lock(book=book)
        if numbers is None:
            memory_refresh(book=book)
            return
        removed = sorted(set(removed or []) | set(memory_orphans(book=book)))
        if removed:
            Chunk.objects.filter(book=book, chapter__in=removed).delete()
        touched: set[str] = set()
        derived = memory_dependents(book=book, chapters=list(numbers) + list(removed), entities=entities or ())
        facts_derive(book=book, chapters=sorted(derived), touched=touched)
        chunks_index(book=book, chapters=list(numbers))
        facts_compact(book=book, subjects=touched)


@transaction.atomic
def memory_refresh(*, book: Book) -> dict[str, int]:
    """Derive every chapter's facts and chunks again (after a rebuild or an import of old data)."""
    derivation_lock(book=book)
    numbers = sorted(book.chapters.values_list("number", flat=True))
    if not Fact.objects.filter(book=book).exists():
        # A rebuild into an empty database: what compaction keeps is decided before anything is written.
        facts = facts_derive_fresh(book=book, numbers=numbers)
        derived = {k: v for k, v in facts.items() if k not in ("merged", "dropped")}
        compacted = {k: facts[k] for k in ("merged", "dropped")}
        chunks = chunks_index(book=book, chapters=numbers, full=True)
    else:
        derived = facts_derive(book=book, chapters=numbers, full=True)
        chunks = chunks_index(book=book, chapters=numbers, full=True)
        compacted = facts_compact(book=book)
    return {"chapters": len(numbers), **derived, "chunks": chunks, **compacted}
