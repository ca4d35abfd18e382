"""The whole-book derivation into a book that holds no facts yet (a rebuild into an empty database),
decided in memory before anything is written.

Step by step (memory/derivation.py, then memory/compaction.py), a rebuild writes every derived fact,
resolves it and logs its history, then de-duplicates and caps the book: on the 3,000-chapter bench
book it made 8,522 facts and dropped 6,653 of them again. Here the same steps run over plain
objects, in the same order — the same observations and keys (``observations_keyed``), the same
resolver changes (``group_changes``), merges (``merges_find``) and cap victims (``cap_victims``) —
and only what survives is written, once: the facts, statuses, successors, evidence, per-fact history
and tombstones the step-by-step path leaves, with the survivors' ids in the same order (setting facts,
then derived ones, each by key). Only the ids themselves differ (no gaps where dropped facts were).

A book that already holds facts (a rebuild over its own database, a finalize) takes the step-by-step
path: its manual, imported and already-derived facts carry history this module does not model.
"""

import dataclasses
import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from core.models import Book
from kernel.bulk import rows_insert, rows_update
from memory.compaction import cap_victims, caps_get, evidence_merge, merges_find
from memory.derivation import (
    Obs,
    book_inputs_digest,
    book_observations,
    chapter_observations,
    fact_row,
    observations_keyed,
    tombstones_skip,
)
from memory.models import DerivationStamp, Fact, FactEvent, FactTombstone
from memory.services import GroupKey, group_changes, setting_facts_state


@dataclass(eq=False, slots=True)
class _Fact:
    """A fact not written yet: the attributes the resolver, the merges and the caps read."""

    pk: int
    key: str
    category: str
    subject: str
    field: str
    value: str
    source_chapter: int
    evidence: list[dict[str, Any]]
    confidence: float
    origin: str
    closed_chapter: int | None
    row: dict[str, Any]
    status: str = Fact.Status.ACTIVE.value
    superseded_by_id: int | None = None
    revises_id: int | None = None
    decided_at: None = None


@dataclass
class _Facts:
    """The book's facts and their history in memory, written by ``store``."""

    facts: dict[int, _Fact] = dataclasses.field(default_factory=dict)
    groups: dict[GroupKey, dict[int, _Fact]] = dataclasses.field(default_factory=lambda: defaultdict(dict))
    events: dict[int, list[tuple[int, dict[str, Any]]]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    tombstones: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    seq: Iterator[int] = dataclasses.field(default_factory=itertools.count)
    pks: Iterator[int] = dataclasses.field(default_factory=lambda: itertools.count(1))

    def event(self, pk: int, **values: Any) -> None:
        row = {"fact_id": pk, "old_status": "", "new_status": "", "chapter": None, "note": "", **values}
        self.events[pk].append((next(self.seq), row))

    def create(self, *, book: Book, desired: dict[str, Obs], origin: str) -> set[GroupKey]:
        """What ``_apply`` inserts for a book without facts: every new fact, in key order, and its
        creation event; returns their groups."""
        groups: set[GroupKey] = set()
        now = timezone.now()
        made = []
        for key in sorted(desired):
            row = fact_row(book=book, key=key, obs=desired[key], origin=origin, now=now)
            fact = _Fact(
                pk=next(self.pks),
                key=key,
                category=row["category"],
                subject=row["subject"],
                field=row["field"],
                value=row["value"],
                source_chapter=row["source_chapter"],
                evidence=row["evidence"],
                confidence=row["confidence"],
                origin=origin,
                closed_chapter=row["closed_chapter"],
                row=row,
            )
            self.facts[fact.pk] = fact
            self.groups[(fact.category, fact.subject, fact.field)][fact.pk] = fact
            groups.add((fact.category, fact.subject, fact.field))
            made.append(fact)
        # the creation events in the order _apply reads the new rows back: 500 keys at a time, each
        # batch in the model's ordering
        for start in range(0, len(made), 500):
            batch = sorted(made[start : start + 500], key=lambda f: (f.category, f.subject, f.field, f.source_chapter))
            for fact in batch:
                self.event(fact.pk, action="created", new_status="active", chapter=fact.source_chapter)
        return groups

    def resolve(self, groups: Iterable[GroupKey]) -> int:
        """``groups_resolve`` over the facts in memory; returns how many facts changed."""
        changed = 0
        stale: list[int] = []
        events: list[dict[str, Any]] = []
        for g in sorted(set(groups)):
            members = self.groups.get(g)
            if not members:
                continue
            for change in group_changes(list(members.values())):
                if change.replaces_events:
                    stale.append(change.fact.pk)
                if change.event is not None:
                    events.append(change.event)
                change.fact.status = change.status
                change.fact.superseded_by_id = change.superseded_by_id
                changed += 1
        for pk in stale:
            self.events[pk] = [e for e in self.events[pk] if e[1]["action"] != "status"]
        for event in events:
            self.events[event["fact_id"]].append((next(self.seq), event))
        return changed

    def delete(self, pks: list[int]) -> None:
        """``facts_delete``: the facts and their history go, and facts they superseded lose the link."""
        gone = set(pks)
        for pk in gone:
            fact = self.facts.pop(pk)
            del self.groups[(fact.category, fact.subject, fact.field)][pk]
            self.events.pop(pk, None)
        for fact in self.facts.values():
            if fact.superseded_by_id in gone:
                fact.superseded_by_id = None

    def compact(self, caps: dict[str, int]) -> dict[str, int]:
        """``facts_compact`` over the whole book in memory."""
        ordered = [
            sorted(self.groups[g].values(), key=lambda f: (f.source_chapter, f.key))
            for g in sorted(self.groups)
            if self.groups[g]
        ]
        merged: list[int] = []
        events: list[tuple[int, dict[str, Any]]] = []
        touched: set[GroupKey] = set()
        for keep, fact in merges_find(ordered):
            evidence_merge(keep=keep, fact=fact)
            merged.append(fact.pk)
            if fact.origin == Fact.Origin.DERIVED:
                self.tombstones.append((fact.key, "merged"))
            events.append((keep.pk, {"chapter": fact.source_chapter, "note": f"合并重复事实 {fact.key}"}))
            touched.add((fact.category, fact.subject, fact.field))
        if merged:
            self.delete(merged)
            for pk, values in events:
                self.event(pk, action="merged", **values)
            self.resolve(touched)
        dropped = 0
        counts: dict[str, int] = defaultdict(int)
        for fact in self.facts.values():
            counts[fact.category] += 1
        for category, cap in sorted(caps.items()):
            count = counts.get(category, 0)
            if cap is None or count <= cap:
                continue
            facts = [f for f in self.facts.values() if f.category == category]
            victims = cap_victims(facts, category=category, over=count - cap)
            self.tombstones += [(v.key, "dropped") for v in victims if v.origin == Fact.Origin.DERIVED]
            if victims:
                self.delete([v.pk for v in victims])
                dropped += len(victims)
                self.resolve({(v.category, v.subject, v.field) for v in victims})
        return {"merged": len(merged), "dropped": dropped}

    def store(self, *, book: Book) -> None:
        """Write the surviving facts, their successors, their history and the tombstones."""
        now = timezone.now()
        live = [self.facts[pk] for pk in sorted(self.facts)]
        rows_insert(
            Fact,
            [{**f.row, "status": f.status, "evidence": f.evidence, "created_at": now, "updated_at": now} for f in live],
        )
        ids = dict(Fact.objects.filter(book=book).values_list("key", "pk"))
        real = {f.pk: ids[f.key] for f in live}
        rows_update(
            Fact,
            [{"pk": real[f.pk], "superseded_by_id": real[f.superseded_by_id]} for f in live if f.superseded_by_id],
            ["superseded_by_id"],
        )
        events = sorted((seq, row) for pk in self.events for seq, row in self.events[pk])
        rows_insert(FactEvent, [{**row, "fact_id": real[row["fact_id"]], "at": now} for _, row in events])
        # No conflict is possible: a key already tombstoned was never derived (``tombstones_skip``).
        rows_insert(FactTombstone, [{"book_id": book.pk, "key": k, "reason": r, "at": now} for k, r in self.tombstones])


def facts_derive_fresh(*, book: Book, numbers: list[int], caps: dict[str, int] | None = None) -> dict[str, int]:
    """``facts_derive(full=True)`` then ``facts_compact`` for a book without facts, decided in memory
    and written once; returns the same counts as those two (see the module docstring)."""
    memory = _Facts()
    stats: dict[str, int] = defaultdict(int)
    digest = book_inputs_digest(book=book)
    stamp = DerivationStamp.objects.filter(book=book).first()
    if stamp is None or stamp.inputs != digest or stamp.facts != setting_facts_state(book=book):
        desired = observations_keyed(book_observations(book=book), prefix="s")
        groups = memory.create(book=book, desired=desired, origin=Fact.Origin.SETTING)
        stats.update(created=len(desired), deleted=0, updated=0, status_changes=memory.resolve(groups))
    desired = observations_keyed(chapter_observations(book=book, chapters=sorted(set(numbers))), prefix="d")
    if desired:
        desired = tombstones_skip(book=book, desired=desired)
    groups = memory.create(book=book, desired=desired, origin=Fact.Origin.DERIVED)
    stats["created"] += len(desired)
    stats["deleted"] += 0
    stats["updated"] += 0
    stats["status_changes"] += memory.resolve(groups)
    compacted = memory.compact(caps or caps_get())
    memory.store(book=book)
    DerivationStamp.objects.update_or_create(
        book=book, defaults={"inputs": digest, "facts": setting_facts_state(book=book)}
    )
    return {**stats, **compacted}
