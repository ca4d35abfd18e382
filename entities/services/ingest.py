"""Ingestion of the Data Agent's extraction of one chapter: parse, resolve every reference, then one
adopt-or-hold loop over the payload's sections (``SECTIONS``: how each section names its entities,
how it is written, why it is held) with the confidence gate written once (``_band``).

Above ``entities.mentions`` (the chapters where a new name occurs are rescanned at once) and the
primitive writes.
"""

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from core.journal import journal_append, journal_lock
from core.models import Book, Chapter
from entities import selectors
from entities.hierarchy import parent_set_from_extraction
from entities.mentions import mentions_names_after, mentions_names_before
from entities.models import Appearance, Entity, Extraction, PendingItem, RelationshipEvent, StateChange
from entities.payload import extraction_json_load, extraction_validate
from entities.schemas import CHAPTER_MAX, ExtractionIn
from entities.services.writes import (
    appearances_write,
    entity_appearance_refresh,
    entity_from_suggestion,
    relationship_event_add,
    relationship_summary_refresh,
    state_change_insert,
)
from kernel.exceptions import Ambiguous, InvalidInput, NotFound
from kernel.indexing import after_chapter_hooks_schedule

ADOPT_ABOVE = 0.8  # > 0.8: adopted silently
WARN_FROM = 0.5  # 0.5 … 0.8: adopted, with a warning recorded; < 0.5: held in the pending queue


def extraction_parse(*, raw: str | bytes) -> dict:
    """Decode an extraction JSON document, or InvalidInput naming the line and column (entities/payload.py)."""
    return extraction_json_load(raw=raw)


def _band(confidence: float | None) -> str:
    """adopt | warn | hold. A missing confidence means the agent is sure (adopt)."""
    if confidence is None or confidence > ADOPT_ABOVE:
        return "adopt"
    if confidence >= WARN_FROM:
        return "warn"
    return "hold"


class _Refs:
    """Resolves entity references of one extraction: id, then an entities_new item of the same
    payload (by suggested_id or name), then a unique alias. Unknown / ambiguous → 422 naming the field."""

    def __init__(self, book: Book, number: int, new_items: dict[str, int], suggestions: list[Any]) -> None:
        self.book = book
        self.chapter = number
        self.new_items = new_items  # suggested_id / name → index in entities_new
        self.suggestions = suggestions  # the entities_new items
        self.created: dict[int, Entity] = {}  # entities_new index → entity (once created)
        self.by_id: dict[str, Entity] = {}

    def prefetch(self, refs: Iterable[str]) -> None:
        """Load every entity the payload names by id in one query (not one per reference)."""
        wanted = set(refs)
        self.by_id = (
            {e.entity_id: e for e in Entity.objects.filter(book=self.book, entity_id__in=wanted)} if wanted else {}
        )

    def resolve(self, ref: str, *, field: str, type: str | None = None) -> Entity | int:
        entity = self.by_id.get(ref)
        if ref in self.new_items:
            item = self.suggestions[self.new_items[ref]]
            # Inside this payload a suggested id means the suggested entity, even when the id is
            # already taken by someone else (the suggestion will get a fresh id).
            if entity is None or (entity.canonical_name, entity.type) != (item.name, item.type):
                return self.new_items[ref]
        if entity is not None:
            return entity
        try:
            return selectors.alias_resolve(book=self.book, alias=ref, type=type, number=self.chapter)
        except NotFound:
            raise InvalidInput(f"{field}: 未知实体 '{ref}'", extra={"field": field, "ref": ref}) from None
        except Ambiguous as exc:
            raise InvalidInput(f"{field}: {exc.message}", extra={"field": field, **exc.extra}) from None

    def entity(self, target: Entity | int | None) -> Entity | None:
        """The entity behind a resolved reference, or None when it is an entities_new item on hold
        (or no reference at all: an uncertain mention nobody adopted)."""
        if target is None or isinstance(target, Entity):
            return target
        return self.created.get(target)


@dataclass
class IngestKnown:
    """What a run of consecutive ingestions (a journal replay) knows of the book without asking the
    database, loaded once (``ingest_known_load``) and kept up to date by ``extraction_ingest``: the
    chapter numbers, the chapters that have an extraction, those with a decided held item, and a
    superset of the entities' (name, type) and ids (a row not in them does not exist, one in them is
    looked up). Valid only while nothing but ``extraction_ingest`` writes: the caller drops it first."""

    chapters: set[int]
    extracted: set[int]
    decided: set[int]
    names: set[tuple[str, str]]
    ids: set[str]


def ingest_known_load(*, book: Book) -> IngestKnown:
    """The ``IngestKnown`` of ``book`` now (four queries)."""
    entities = list(Entity.objects.filter(book=book).values_list("canonical_name", "type", "entity_id"))
    return IngestKnown(
        chapters=set(Chapter.objects.filter(book=book).values_list("number", flat=True)),
        extracted=set(Extraction.objects.filter(book=book).values_list("chapter", flat=True)),
        decided=set(
            PendingItem.objects.filter(book=book, source="extraction")
            .exclude(status=PendingItem.Status.PENDING)
            .values_list("chapter", flat=True)
        ),
        names={(name, type) for name, type, _ in entities},
        ids={entity_id for _, _, entity_id in entities},
    )


def _chapter_rows_clear(*, book: Book, number: int, kept_changes: frozenset[int]) -> dict[str, int]:
    """Remove what the previous extraction of this chapter wrote (its own source only; ``kept_changes``:
    not the state changes of another chapter's ingestion that a curator moved here)."""
    ingested = StateChange.objects.filter(book=book, chapter=number, source=StateChange.Source.EXTRACTION).exclude(
        pk__in=kept_changes
    )
    touched_entities = set(ingested.values_list("entity_id", flat=True))
    changes, _ = ingested.delete()
    appearance_qs = Appearance.objects.filter(book=book, chapter=number, source=Appearance.Source.EXTRACTION)
    touched_entities |= set(appearance_qs.values_list("entity_id", flat=True))
    appearances, _ = appearance_qs.delete()
    events = RelationshipEvent.objects.filter(
        relationship__book=book, chapter=number, source=RelationshipEvent.Source.EXTRACTION
    )
    rel_pks = set(events.values_list("relationship_id", flat=True))
    events.delete()
    relationship_summary_refresh(relationship_pks=rel_pks)
    pending, _ = PendingItem.objects.filter(
        book=book, chapter=number, source="extraction", status=PendingItem.Status.PENDING
    ).delete()
    entity_appearance_refresh(entity_pks=touched_entities)
    return {
        "state_changes": changes,
        "appearances": appearances,
        "relationship_events": len(rel_pks),
        "pending": pending,
    }


def _orphans_drop(*, book: Book, entity_ids: Iterable[str], keep: set[str]) -> None:
    """Entities created by a previous extraction of the chapter and gone from the new one are
    deleted unless something else now refers to them."""
    for entity in Entity.objects.filter(book=book, entity_id__in=[e for e in entity_ids if e not in keep]):
        if entity.source != "extraction":
            continue
        if (
            entity.state_changes.exists()
            or entity.appearances.exclude(source=Appearance.Source.SCAN).exists()
            or entity.relationships_out.exists()
            or entity.relationships_in.exists()
        ):
            continue
        entity.delete()


def pending_decision_key(*, kind: str, payload: Any) -> str:
    """The identity of a held item, to recognise one a human already confirmed or rejected (from the
    row, or from a ``pending.confirm`` / ``pending.reject`` event's kind and payload)."""
    return json.dumps([kind, payload], ensure_ascii=False, sort_keys=True, default=str)


def _hold(
    *,
    book: Book,
    number: int,
    kind: str,
    payload: dict,
    confidence: float | None,
    note: str,
    decided: set,
    decided_later: frozenset[str],
) -> int:
    """Queue a held write unless a human already decided the same item for this chapter; returns how
    many items this ingestion holds (one decided after it, ``decided_later``, is held and counted, its
    decided row kept)."""
    key = pending_decision_key(kind=kind, payload=payload)
    if key in decided:
        return 1 if key in decided_later else 0
    PendingItem.objects.create(
        book=book, chapter=number, kind=kind, payload=payload, confidence=confidence, note=note, source="extraction"
    )
    return 1


# --- the sections of a payload --------------------------------------------------------------------


@dataclass
class _Ingestion:
    """What one extraction_ingest call has adopted so far: the state its section writers share."""

    book: Book
    chapter: int
    refs: _Refs
    previously_created: set[str]  # entities the chapter's previous extraction created
    known: IngestKnown | None = None
    warnings: list[dict] = field(default_factory=list)
    # entities this chapter's extraction created (now or when first ingested)
    created_ids: list[str] = field(default_factory=list)
    # every entity an entities_new item stands for, matched ones too
    suggested_ids: set[str] = field(default_factory=set)
    taken: set[str] = field(default_factory=set)  # ids given to this payload's new entities
    touched: set[int] = field(default_factory=set)  # entity pks whose first / last appearance may move
    # entity pk → (entity, count, aliases) of the appearances to write
    appearances: dict[int, tuple[Entity, int, list[str]]] = field(default_factory=dict)
    seqs: dict[int, int] = field(default_factory=dict)  # entity pk → last seq written at this chapter
    relationship_pks: set[int] = field(default_factory=set)  # relationships that got an event

    def warn(self, field: str, confidence: float | None, message: str) -> None:
        self.warnings.append({"field": field, "confidence": confidence, "message": message})

    def appear(self, entity: Entity, count: int, aliases: list[str] | None) -> None:
        _, total, names = self.appearances.get(entity.pk, (entity, 0, []))
        self.appearances[entity.pk] = (entity, total + count, names + list(aliases or []))
        self.touched.add(entity.pk)


# Each writer adopts one item (its entities all resolved and none on hold) and returns the text of
# the warning recorded when its confidence is in the 0.5–0.8 band.


def _entity_new_write(run: _Ingestion, i: int, item: Any, entities: tuple[Entity, ...]) -> str:
    known = run.known
    entity, created = entity_from_suggestion(
        book=run.book,
        number=run.chapter,
        item=item,
        taken=run.taken,
        names=known.names if known is not None else None,
        ids=known.ids if known is not None else None,
    )
    run.taken.add(entity.entity_id)
    if item.parent:  # issue 31: the hierarchy (a file entity's parent stays the roster's)
        refused = parent_set_from_extraction(entity=entity, ref=item.parent)
        if refused:
            run.warn(f"entities_new[{i}].parent", item.confidence, refused)
    run.refs.created[i] = entity
    run.suggested_ids.add(entity.entity_id)
    if created or entity.entity_id in run.previously_created:
        run.created_ids.append(entity.entity_id)
    return f"新实体 '{item.name}'（{entity.entity_id}）置信度 {item.confidence}，已采用，请复核"


def _appeared_write(run: _Ingestion, i: int, a: Any, entities: tuple[Entity, ...]) -> str:
    count = len(a.mentions) if isinstance(a.mentions, list) else (a.mentions or 1)
    run.appear(entities[0], count, a.mentions if isinstance(a.mentions, list) else None)
    return f"出场 '{a.id}' 置信度 {a.confidence}，已采用，请复核"


def _state_change_write(run: _Ingestion, i: int, c: Any, entities: tuple[Entity, ...]) -> str:
    (entity,) = entities
    where = f"state_changes[{i}]"
    before = selectors.entity_state_as_of(entity=entity, number=run.chapter).get(c.field)
    if c.old is not None and c.op == "set" and before is not None and before != c.old:
        run.warn(
            f"{where}.old",
            c.confidence,
            f"'{entity.entity_id}.{c.field}' 旧值 {c.old!r} 与重放得到的 {before!r} 不一致",
        )
    state_change_insert(
        entity=entity,
        number=run.chapter,
        field=c.field,
        op=c.op,
        new=c.new,
        old=c.old if c.old is not None else before,
        reason=c.reason,
        confidence=c.confidence,
        source=StateChange.Source.EXTRACTION,
        where=where,
        seqs=run.seqs,
    )
    run.touched.add(entity.pk)
    return f"状态变更 {entity.entity_id}.{c.field} 置信度 {c.confidence}，已采用，请复核"


def _relationship_write(run: _Ingestion, i: int, r: Any, entities: tuple[Entity, ...]) -> str:
    from_entity, to_entity = entities
    rel = relationship_event_add(
        from_entity=from_entity,
        to_entity=to_entity,
        type=r.type,
        description=r.description,
        number=run.chapter,
        source=RelationshipEvent.Source.EXTRACTION,
    )
    run.relationship_pks.add(rel.pk)
    return f"关系 {r.from_}→{r.to}（{r.type}）置信度 {r.confidence}，已采用，请复核"


def _uncertain_write(run: _Ingestion, i: int, u: Any, entities: tuple[Entity, ...]) -> str:
    # An adopted candidate counts as an appearance; the rest wait for a human.
    run.appear(entities[0], 1, [u.mention])
    return f"'{u.mention}' 判为 {entities[0].entity_id}，置信度 {u.confidence}，请复核"


def _held_note(item: Any, blocked: bool) -> str:
    if blocked:
        return "引用的新实体仍在待确认队列中，请先确认该实体"
    return f"置信度 {item.confidence} 低于 {WARN_FROM}，未写入"


_Ref = tuple[str, str | None, str | None]  # (key of the field, the reference or None, the entity type it must have)


@dataclass(frozen=True)
class _Section:
    """How extraction_ingest adopts or holds the items of one section of the payload."""

    kind: str  # PendingItem kind of a held item
    refs: Callable[[Any], tuple[_Ref, ...]]  # the entities an item names (a None reference: none, so held)
    write: Callable[[_Ingestion, int, Any, tuple[Entity, ...]], str]
    note: Callable[[Any, bool], str]  # why an item is held (``blocked``: an entity it names is on hold)
    check: Callable[[int, Any, tuple], None] | None = None  # after the section's references resolve


def _appeared_type_check(i: int, a: Any, targets: tuple) -> None:
    """An id names its entity whatever its type: a type the agent states must be that entity's."""
    target = targets[0]
    if a.type and isinstance(target, Entity) and target.type != a.type:
        raise InvalidInput(
            f"entities_appeared[{i}].type: 实体 '{a.id}' 的类型是 {target.type}，不是 {a.type}",
            extra={"field": f"entities_appeared[{i}].type"},
        )


# In the order they are written: new entities first, so the other sections can name them.
SECTIONS: dict[str, _Section] = {
    "entities_new": _Section(
        kind=PendingItem.Kind.ENTITY_NEW,
        refs=lambda item: (),
        write=_entity_new_write,
        note=lambda item, blocked: f"新实体 '{item.name}' 置信度低于 {WARN_FROM}",
    ),
    "entities_appeared": _Section(
        kind=PendingItem.Kind.ENTITY_APPEARED,
        refs=lambda a: (("id", a.id, a.type),),
        write=_appeared_write,
        note=_held_note,
        check=_appeared_type_check,
    ),
    "state_changes": _Section(
        kind=PendingItem.Kind.STATE_CHANGE,
        refs=lambda c: (("entity_id", c.entity_id, None),),
        write=_state_change_write,
        note=_held_note,
    ),
    "relationships_new": _Section(
        kind=PendingItem.Kind.RELATIONSHIP,
        refs=lambda r: (("from", r.from_, None), ("to", r.to, None)),
        write=_relationship_write,
        note=_held_note,
    ),
    "uncertain": _Section(
        kind=PendingItem.Kind.UNCERTAIN,
        refs=lambda u: (("adopted", u.adopted or None, None),),
        write=_uncertain_write,
        note=lambda u, blocked: f"'{u.mention}' 指代不确定，候选：{'、'.join(u.candidates) or '无'}",
    ),
}


def _references_resolve(*, book: Book, number: int, data: ExtractionIn) -> tuple[_Refs, dict[str, list[tuple]]]:
    """Every entity reference of the payload resolved, section by section (section → per item, the
    targets of its references: an entity, an entities_new index, or None), or the 422 of the first bad one."""
    new_items: dict[str, int] = {}
    for i, item in enumerate(data.entities_new):
        for key in (item.suggested_id, item.name):
            if key:
                new_items.setdefault(key, i)
    refs = _Refs(book, number, new_items, data.entities_new)
    refs.prefetch(
        ref
        for name, section in SECTIONS.items()
        for item in getattr(data, name)
        for _, ref, _ in section.refs(item)
        if ref is not None
    )
    targets: dict[str, list[tuple]] = {}
    for name, section in SECTIONS.items():
        items = getattr(data, name)
        targets[name] = [
            tuple(
                None if ref is None else refs.resolve(ref, field=f"{name}[{i}].{key}", type=type)
                for key, ref, type in section.refs(item)
            )
            for i, item in enumerate(items)
        ]
        if section.check is not None:
            for i, (item, item_targets) in enumerate(zip(items, targets[name], strict=True)):
                section.check(i, item, item_targets)
    return refs, targets


@transaction.atomic
def extraction_ingest(
    *,
    book: Book,
    number: int,
    payload: dict,
    journal: bool = True,
    hooks: bool = True,
    known: IngestKnown | None = None,
    decided_later: frozenset[str] = frozenset(),
    kept_changes: frozenset[int] = frozenset(),
) -> dict:
    """Ingest the Data Agent's extraction of one chapter in one transaction: confidence > 0.8 is
    adopted, 0.5–0.8 adopted with a recorded warning, < 0.5 held in the pending queue. Re-ingesting a
    chapter replaces what its previous extraction wrote (idempotent).

    The payload goes into the book folder's journal (``core.journal``) unless ``journal`` is False (the
    rebuild replaying that journal); ``hooks`` False skips the after-chapter hooks (the rebuild runs
    them once for the whole book); ``known`` (a replay of consecutive ingestions) answers the lookups
    of chapters, extractions, decisions and entities that it can without a query. ``decided_later``
    (an edited extraction applied again: their ``pending_decision_key``): the decisions the journal records
    after this ingestion, which it counts as held, as it did at its place in the journal; ``kept_changes``
    the pks of state changes at this chapter that are not its extraction's to replace (another
    chapter's, moved here by a curator)."""
    if not 1 <= number <= CHAPTER_MAX:
        raise InvalidInput(f"章节号应在 1 到 {CHAPTER_MAX} 之间，收到 {number}", extra={"chapter": number})
    data = extraction_validate(payload)
    # First, before reading anything: a second ingestion of the chapter (an agent retrying) or a
    # rebuild / sync of the book in flight finishes before this one reads, so it replaces their rows
    # instead of writing beside them (PostgreSQL; SQLite's IMMEDIATE transactions serialize writers).
    journal_lock(book=book, heal=journal)  # and a crashed writer's event applied first
    exists = (
        number in known.chapters if known is not None else Chapter.objects.filter(book=book, number=number).exists()
    )
    if not exists:
        raise NotFound(
            f"第{number}章不存在（《{book.title or book.slug}》）", extra={"book": book.slug, "chapter": number}
        )
    names_before = mentions_names_before(book=book)
    previous = (
        Extraction.objects.filter(book=book, chapter=number).first()
        if known is None or number in known.extracted
        else None
    )
    if previous is not None:
        _chapter_rows_clear(book=book, number=number, kept_changes=kept_changes)
    decided = (
        {
            pending_decision_key(kind=p.kind, payload=p.payload)
            for p in PendingItem.objects.filter(book=book, chapter=number, source="extraction").exclude(
                status=PendingItem.Status.PENDING
            )
        }
        if known is None or number in known.decided
        else set()
    )

    # 1. Resolve every reference before writing anything, so an unknown one is a clean 422.
    refs, targets = _references_resolve(book=book, number=number, data=data)

    # 2. Adopt or hold each item, section by section.
    run = _Ingestion(
        book=book,
        chapter=number,
        refs=refs,
        previously_created=set(previous.summary.get("created_entities", [])) if previous is not None else set(),
        known=known,
    )
    adopted: dict[str, int] = defaultdict(int)
    pending = 0
    for name, section in SECTIONS.items():
        for i, (item, item_targets) in enumerate(zip(getattr(data, name), targets[name], strict=True)):
            entities = tuple(refs.entity(target) for target in item_targets)
            blocked = any(entity is None for entity in entities)
            band = _band(item.confidence)
            if band == "hold" or blocked:
                pending += _hold(
                    book=book,
                    number=number,
                    kind=section.kind,
                    payload=payload[name][i],
                    confidence=item.confidence,
                    note=section.note(item, blocked),
                    decided=decided,
                    decided_later=decided_later,
                )
                continue
            message = section.write(run, i, item, entities)
            adopted[name] += 1
            if band == "warn":
                run.warn(f"{name}[{i}]", item.confidence, message)
    relationship_summary_refresh(relationship_pks=run.relationship_pks)
    appearances_write(number=number, source=Appearance.Source.EXTRACTION, appearances=list(run.appearances.values()))

    if previous is not None:
        _orphans_drop(book=book, entity_ids=run.previously_created, keep=run.suggested_ids)
    adopted.setdefault("entities_new", 0)  # the stored summary has always listed it, even at 0
    # New names (and the names of dropped orphans): every chapter where they occur is rescanned, so
    # the scan is the same as a rebuild's, whatever order the chapters were ingested in.
    mentions_names_after(book=book, before=names_before)
    # Only the entities whose rows this ingestion wrote: a new one not among them has no appearance
    # row to move its span (its chapter's scan refreshed what it found), so its refresh is a no-op.
    entity_appearance_refresh(entity_pks=run.touched)

    summary = {"adopted": dict(adopted), "pending": pending, "created_entities": run.created_ids}
    # Migrated chapter_meta (from an old state.json) stays under the agent's keys across re-ingests.
    migrated_meta = previous.summary.get("migrated_chapter_meta") if previous is not None else None
    if migrated_meta:
        summary["migrated_chapter_meta"] = migrated_meta
    values = {
        "payload": payload,
        "warnings": run.warnings,
        "scenes": [s.model_dump() for s in data.scenes],
        "chapter_meta": {**(migrated_meta or {}), **data.chapter_meta},
        "uncertain": [u.model_dump() for u in data.uncertain],
        "summary": summary,
        "source": "extraction",
    }
    # No update_or_create (a SAVEPOINT, a SELECT … FOR UPDATE and a RELEASE): ``previous`` was read
    # after the chapter's lock (PostgreSQL) or inside the single writer's transaction (SQLite).
    if previous is None:
        Extraction.objects.create(book=book, chapter=number, **values)
        if known is not None:
            known.extracted.add(number)
    else:
        for name, value in values.items():
            setattr(previous, name, value)
        previous.save(update_fields=[*values, "updated_at"])
    if journal:
        journal_append(
            book=book, op="extraction.ingest", attachment=(f"extractions/{number:04d}", payload), chapter=number
        )
    result = {
        "book": book.slug,
        "chapter": number,
        "adopted": {name: adopted.get(name, 0) for name in SECTIONS},
        "pending": pending,
        "warnings": run.warnings,
        "created_entities": run.created_ids,
        "replaced": previous is not None and previous.source == "extraction",
    }
    # The hook fills result["hook_failures"] after the commit, before the caller reads the result.
    if hooks:
        after_chapter_hooks_schedule(book=book, numbers=[number], removed=[], report=result)
    return result
