"""Writes of the entities app. Every service is atomic, keyword-only, and raises domain exceptions
(NotFound / Ambiguous / InvalidInput) with a Chinese message naming what was wrong and where.

Provenance is kept on every row (``source``): a re-ingested chapter replaces only the rows its own
previous extraction wrote, so curated, tagged and migrated data survive re-ingestion and rebuilds.
"""

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import Max, Min, Q
from django.utils import timezone

from core.locks import book_write_lock
from core.models import Book, Chapter
from entities import selectors
from entities.discovery.services import discovery_confirm, discovery_names, discovery_reject_record
from entities.generic import alias_is_generic
from entities.ids import entity_id_base, entity_ids_assign
from entities.mentions import matcher_invalidate, mentions_index
from entities.models import (
    Alias,
    Appearance,
    Entity,
    Extraction,
    PendingItem,
    Relationship,
    RelationshipEvent,
    StateChange,
)
from entities.payload import extraction_json_load, extraction_validate
from entities.replay import OPS, is_number
from entities.schemas import CHAPTER_MAX, ExtractionIn
from kernel.exceptions import Ambiguous, Conflict, InvalidInput, NotFound
from kernel.indexing import after_chapter_hooks_schedule

ADOPT_ABOVE = 0.8  # > 0.8: adopted silently
WARN_FROM = 0.5  # 0.5 … 0.8: adopted, with a warning recorded; < 0.5: held in the pending queue


# --- ids --------------------------------------------------------------------------------------


def entity_id_generate(*, book: Book, name: str, type: str, taken: set[str] | None = None) -> str:
    """A fresh pinyin id for ``name`` of ``type`` in ``book``: ``_1``, ``_2`` … on collision."""
    base = entity_id_base(name=name, type=type)
    existing = set(Entity.objects.filter(book=book, entity_id__startswith=base).values_list("entity_id", flat=True))
    return entity_ids_assign([(name, type, "")], taken=existing | (taken or set()))[0]


# --- entities and aliases -----------------------------------------------------------------------


# The ``_``-prefixed writers below are the bodies of the public atomic services (``entity_create =
# transaction.atomic(_entity_create)``…), for callers that
# already hold a transaction (extraction_ingest): a nested ``atomic`` is a SAVEPOINT and a RELEASE,
# two more round trips per row on PostgreSQL, and nothing there ever rolls back to one.


def _entity_create(
    *,
    book: Book,
    name: str,
    type: str,
    tier: str = Entity.Tier.MINOR,
    description: str = "",
    entity_id: str | None = None,
    aliases: Iterable[str | dict] = (),
    base_state: dict | None = None,
    is_protagonist: bool = False,
    first_appearance: int | None = None,
    source: str = "admin",
) -> Entity:
    """Create an entity (pinyin id unless given) with its aliases."""
    if type not in Entity.Type.values:
        raise InvalidInput(f"未知的实体类型 '{type}'，可选 {'/'.join(Entity.Type.values)}", extra={"type": type})
    if tier not in Entity.Tier.values:
        raise InvalidInput(f"未知的层级 '{tier}'，可选 {'/'.join(Entity.Tier.values)}", extra={"tier": tier})
    if entity_id and Entity.objects.filter(book=book, entity_id=entity_id).exists():
        raise InvalidInput(f"实体 id '{entity_id}' 已存在", extra={"id": entity_id})
    entity = Entity.objects.create(
        book=book,
        entity_id=entity_id or entity_id_generate(book=book, name=name, type=type),
        type=type,
        canonical_name=name,
        tier=tier,
        description=description,
        base_state=base_state or {},
        is_protagonist=is_protagonist,
        first_appearance=first_appearance,
        last_appearance=first_appearance,
        source=source,
    )
    for alias in aliases:
        _alias_add_any(entity, alias, source=source)
    return entity


entity_create = transaction.atomic(_entity_create)


def _alias_add(
    *,
    entity: Entity,
    alias: str,
    valid_from: int | None = None,
    valid_to: int | None = None,
    note: str = "",
    source: str = "admin",
    generic: bool = False,
) -> Alias | None:
    """Give ``entity`` another name (no-op for its canonical name or an alias it already has);
    ``generic`` marks a pronoun / kinship / role word whose mentions are weak."""
    alias = alias.strip()
    if not alias:
        raise InvalidInput("别名不能为空", extra={"entity": entity.entity_id})
    if valid_from is not None and valid_to is not None and valid_from > valid_to:
        raise InvalidInput(f"别名 '{alias}' 的有效区间无效：from {valid_from} > to {valid_to}", extra={"alias": alias})
    if alias == entity.canonical_name and generic:
        raise InvalidInput(f"正名 '{alias}' 不能标为泛称", extra={"entity": entity.entity_id, "alias": alias})
    if alias == entity.canonical_name and valid_from is None and valid_to is None and not note:
        return None
    row, created = Alias.objects.get_or_create(
        entity=entity,
        alias=alias,
        defaults={
            "book_id": entity.book_id,
            "valid_from": valid_from,
            "valid_to": valid_to,
            "note": note,
            "source": source,
            "generic": generic,
        },
    )
    if not created and (valid_from is not None or valid_to is not None or note):
        row.valid_from, row.valid_to, row.note = valid_from, valid_to, note or row.note
        row.save(update_fields=["valid_from", "valid_to", "note"])
    if not created and generic and not row.generic:
        # marking generic only ever weakens an alias: a later plain mention never un-marks it
        row.generic = True
        row.save(update_fields=["generic"])
    return row


alias_add = transaction.atomic(_alias_add)


def entity_appearance_refresh(*, entity_pks: Iterable[int]) -> None:
    """Recompute first/last appearance of these entities from their appearance rows."""
    pks = list(set(entity_pks))
    if not pks:
        return
    spans = {
        row["entity_id"]: (row["first"], row["last"])
        for row in Appearance.objects.filter(entity_id__in=pks)
        .values("entity_id")
        .annotate(first=Min("chapter"), last=Max("chapter"))
    }
    changes = StateChange.objects.filter(entity_id__in=pks).values("entity_id").annotate(first=Min("chapter"))
    first_change = {row["entity_id"]: row["first"] for row in changes}
    for entity in Entity.objects.filter(pk__in=pks):
        first, last = spans.get(entity.pk, (None, None))
        if first is None and entity.source != "file":
            # Entities never seen in text keep what their creator recorded (migration, suggestion).
            first, last = entity.first_appearance or first_change.get(entity.pk), entity.last_appearance
        if (entity.first_appearance, entity.last_appearance) != (first, last):
            Entity.objects.filter(pk=entity.pk).update(first_appearance=first, last_appearance=last)


# --- state changes -----------------------------------------------------------------------------


def state_change_check(
    *, entity: Entity, chapter: int, field: str, op: str, new: Any, where: str = "state_change"
) -> None:
    """Raise InvalidInput (naming ``where``) when the change cannot be recorded."""
    if op not in OPS:
        raise InvalidInput(f"{where}.op: 未知操作 '{op}'，可选 {'/'.join(OPS)}", extra={"field": f"{where}.op"})
    if chapter is None or chapter < 0:
        raise InvalidInput(f"{where}.chapter: 章节号无效", extra={"field": f"{where}.chapter"})
    if op in {"set", "add", "remove"} and new is None:
        raise InvalidInput(f"{where}.new: {op} 需要 new 值", extra={"field": f"{where}.new"})
    if op == "inc":
        if not is_number(new):
            raise InvalidInput(f"{where}.new: inc 的增量必须是数字，收到 {new!r}", extra={"field": f"{where}.new"})
        current = selectors.entity_state_as_of(entity=entity, chapter=chapter).get(field)
        if current is not None and not is_number(current):
            raise InvalidInput(
                f"{where}.field: '{field}' 当前值 {current!r} 不是数字，不能 inc",
                extra={"field": f"{where}.field", "current": current},
            )


@transaction.atomic
def state_change_record(
    *,
    entity: Entity,
    chapter: int,
    field: str,
    op: str = "set",
    new: Any = None,
    old: Any = None,
    reason: str = "",
    confidence: float | None = None,
    source: str = StateChange.Source.CURATION,
    where: str = "state_change",
) -> StateChange:
    """Record one change of one field at ``chapter`` (after the chapter's existing changes)."""
    return _state_change_insert(
        entity=entity,
        chapter=chapter,
        field=field,
        op=op,
        new=new,
        old=old,
        reason=reason,
        confidence=confidence,
        source=source,
        where=where,
    )


def _state_change_insert(
    *,
    entity: Entity,
    chapter: int,
    field: str,
    op: str,
    new: Any,
    old: Any,
    reason: str,
    confidence: float | None,
    source: str,
    where: str,
    seqs: dict[int, int] | None = None,
) -> StateChange:
    """``seqs`` (entity pk → last seq at ``chapter``) spares the MAX(seq) query for an entity whose
    changes at this chapter this caller has already written."""
    state_change_check(entity=entity, chapter=chapter, field=field, op=op, new=new, where=where)
    if seqs is not None and entity.pk in seqs:
        seq = seqs[entity.pk] + 1
    else:
        seq = (StateChange.objects.filter(entity=entity, chapter=chapter).aggregate(m=Max("seq"))["m"] or 0) + 1
    if seqs is not None:
        seqs[entity.pk] = seq
    return StateChange.objects.create(
        book_id=entity.book_id,
        entity=entity,
        chapter=chapter,
        seq=seq,
        field=field,
        op=op,
        old=old,
        new=new,
        reason=reason,
        confidence=confidence,
        source=source,
    )


# --- relationships --------------------------------------------------------------------------------


def relationship_summary_refresh(*, relationship_pks: Iterable[int]) -> None:
    """Re-derive description / chapter / last_chapter from the events; drop relationships left without one."""
    pks = list(set(relationship_pks))
    if not pks:
        return
    # Two queries and one UPDATE for the lot, not three round trips per relationship.
    events: dict[int, list[tuple[int | None, str]]] = defaultdict(list)
    for rel_pk, chapter, description in (
        RelationshipEvent.objects.filter(relationship_id__in=pks)
        .order_by("chapter", "id")
        .values_list("relationship_id", "chapter", "description")
    ):
        events[rel_pk].append((chapter, description))
    empty, changed = [], []
    for rel in Relationship.objects.filter(pk__in=pks).only("pk", "description", "chapter", "last_chapter"):
        if not events[rel.pk]:
            empty.append(rel.pk)
            continue
        described = [description for _, description in events[rel.pk] if description]
        chapters = [chapter for chapter, _ in events[rel.pk] if chapter is not None]
        summary = (
            described[-1] if described else "",
            min(chapters) if chapters else None,
            max(chapters) if chapters else None,
        )
        if (rel.description, rel.chapter, rel.last_chapter) != summary:
            rel.description, rel.chapter, rel.last_chapter = summary
            changed.append(rel)
    if changed:
        Relationship.objects.bulk_update(changed, ["description", "chapter", "last_chapter"])
    if empty:
        Relationship.objects.filter(pk__in=empty).delete()


@transaction.atomic
def relationship_record(
    *,
    from_entity: Entity,
    to_entity: Entity,
    type: str,
    description: str = "",
    chapter: int | None = None,
    source: str = RelationshipEvent.Source.CURATION,
) -> Relationship:
    """Create the (from, to, type) relationship or add an event to it."""
    rel = _relationship_event_add(
        from_entity=from_entity, to_entity=to_entity, type=type, description=description, chapter=chapter, source=source
    )
    relationship_summary_refresh(relationship_pks=[rel.pk])
    rel.refresh_from_db()
    return rel


def _relationship_event_add(
    *, from_entity: Entity, to_entity: Entity, type: str, description: str, chapter: int | None, source: str
) -> Relationship:
    """The event only: the caller refreshes the relationship's summary (once for all its events)."""
    if from_entity.book_id != to_entity.book_id:
        raise InvalidInput("关系两端必须属于同一本书", extra={"from": from_entity.entity_id, "to": to_entity.entity_id})
    if not type.strip():
        raise InvalidInput("关系类型不能为空", extra={"from": from_entity.entity_id, "to": to_entity.entity_id})
    rel, _ = Relationship.objects.get_or_create(
        from_entity=from_entity, to_entity=to_entity, type=type.strip(), defaults={"book_id": from_entity.book_id}
    )
    RelationshipEvent.objects.create(relationship=rel, chapter=chapter, description=description, source=source)
    return rel


# --- extraction ingestion -----------------------------------------------------------------------


def extraction_parse(*, raw: str | bytes) -> dict:
    """Decode an extraction JSON document, or InvalidInput naming the line and column (entities/payload.py)."""
    return extraction_json_load(raw=raw)


def _validate(payload: dict) -> ExtractionIn:
    """The payload as ExtractionIn, or a 422 naming each bad JSON path (entities/payload.py)."""
    return extraction_validate(payload)


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

    def __init__(self, book: Book, chapter: int, new_items: dict[str, int], suggestions: list[Any]) -> None:
        self.book = book
        self.chapter = chapter
        self.new_items = new_items  # suggested_id / name → index in entities_new
        self.suggestions = suggestions  # the entities_new items
        self.created: dict[int, Entity] = {}  # entities_new index → entity (once created)
        self.held: set[int] = set()  # entities_new indexes held in the pending queue
        self.by_id: dict[str, Entity] = {}

    def prefetch(self, refs: Iterable[str]) -> None:
        """Load every entity the payload names by id in one query (not one per reference)."""
        self.by_id = {e.entity_id: e for e in Entity.objects.filter(book=self.book, entity_id__in=set(refs))}

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
            return selectors.alias_resolve(book=self.book, alias=ref, type=type, chapter=self.chapter)
        except NotFound:
            raise InvalidInput(f"{field}: 未知实体 '{ref}'", extra={"field": field, "ref": ref}) from None
        except Ambiguous as exc:
            raise InvalidInput(f"{field}: {exc.message}", extra={"field": field, **exc.extra}) from None

    def entity(self, target: Entity | int) -> Entity | None:
        """The entity behind a resolved reference, or None when it is an entities_new item on hold."""
        if isinstance(target, Entity):
            return target
        return self.created.get(target)


def _chapter_rows_clear(*, book: Book, chapter: int) -> dict[str, int]:
    """Remove what the previous extraction of this chapter wrote (its own source only)."""
    touched_entities = set(
        StateChange.objects.filter(book=book, chapter=chapter, source=StateChange.Source.EXTRACTION).values_list(
            "entity_id", flat=True
        )
    )
    changes, _ = StateChange.objects.filter(book=book, chapter=chapter, source=StateChange.Source.EXTRACTION).delete()
    appearance_qs = Appearance.objects.filter(book=book, chapter=chapter, source=Appearance.Source.EXTRACTION)
    touched_entities |= set(appearance_qs.values_list("entity_id", flat=True))
    appearances, _ = appearance_qs.delete()
    events = RelationshipEvent.objects.filter(
        relationship__book=book, chapter=chapter, source=RelationshipEvent.Source.EXTRACTION
    )
    rel_pks = set(events.values_list("relationship_id", flat=True))
    events.delete()
    relationship_summary_refresh(relationship_pks=rel_pks)
    pending, _ = PendingItem.objects.filter(
        book=book, chapter=chapter, source="extraction", status=PendingItem.Status.PENDING
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


def _hold(
    *, book: Book, chapter: int, kind: str, payload: dict, confidence: float | None, note: str, resolved: set
) -> int:
    """Queue a held write unless a human already decided the same item for this chapter."""
    key = json.dumps([kind, payload], ensure_ascii=False, sort_keys=True, default=str)
    if key in resolved:
        return 0
    PendingItem.objects.create(
        book=book, chapter=chapter, kind=kind, payload=payload, confidence=confidence, note=note, source="extraction"
    )
    return 1


@transaction.atomic
def extraction_ingest(*, book: Book, chapter: int, payload: dict) -> dict:
    """Ingest the Data Agent's extraction of one chapter in one transaction: confidence > 0.8 is
    adopted, 0.5–0.8 adopted with a recorded warning, < 0.5 held in the pending queue. Re-ingesting a
    chapter replaces what its previous extraction wrote (idempotent)."""
    if not 1 <= chapter <= CHAPTER_MAX:
        raise InvalidInput(f"章节号应在 1 到 {CHAPTER_MAX} 之间，收到 {chapter}", extra={"chapter": chapter})
    data = _validate(payload)
    # First, before reading anything: a second ingestion of the chapter (an agent retrying) or a
    # rebuild / sync of the book in flight finishes before this one reads, so it replaces their rows
    # instead of writing beside them (PostgreSQL; SQLite's IMMEDIATE transactions serialize writers).
    book_write_lock(book=book)
    if not Chapter.objects.filter(book=book, number=chapter).exists():
        raise NotFound(
            f"第{chapter}章不存在（《{book.title or book.slug}》）", extra={"book": book.slug, "chapter": chapter}
        )
    previous = Extraction.objects.filter(book=book, chapter=chapter).first()
    if previous is not None:
        _chapter_rows_clear(book=book, chapter=chapter)
    resolved = {
        json.dumps([p.kind, p.payload], ensure_ascii=False, sort_keys=True, default=str)
        for p in PendingItem.objects.filter(book=book, chapter=chapter, source="extraction").exclude(
            status=PendingItem.Status.PENDING
        )
    }

    warnings: list[dict] = []
    adopted = defaultdict(int)
    pending = 0

    def warn(field: str, confidence: float | None, message: str) -> None:
        warnings.append({"field": field, "confidence": confidence, "message": message})

    # 1. Resolve every reference before writing anything, so an unknown one is a clean 422.
    new_items: dict[str, int] = {}
    for i, item in enumerate(data.entities_new):
        for key in (item.suggested_id, item.name):
            if key:
                new_items.setdefault(key, i)
    refs = _Refs(book, chapter, new_items, data.entities_new)
    refs.prefetch(
        [a.id for a in data.entities_appeared]
        + [c.entity_id for c in data.state_changes]
        + [ref for r in data.relationships_new for ref in (r.from_, r.to)]
        + [u.adopted for u in data.uncertain if u.adopted]
    )
    appeared_targets = [
        refs.resolve(a.id, field=f"entities_appeared[{i}].id", type=a.type)
        for i, a in enumerate(data.entities_appeared)
    ]
    for i, (a, target) in enumerate(zip(data.entities_appeared, appeared_targets, strict=True)):
        if a.type and isinstance(target, Entity) and target.type != a.type:
            raise InvalidInput(
                f"entities_appeared[{i}].type: 实体 '{a.id}' 的类型是 {target.type}，不是 {a.type}",
                extra={"field": f"entities_appeared[{i}].type"},
            )
    change_targets = [
        refs.resolve(c.entity_id, field=f"state_changes[{i}].entity_id") for i, c in enumerate(data.state_changes)
    ]
    rel_targets = [
        (
            refs.resolve(r.from_, field=f"relationships_new[{i}].from"),
            refs.resolve(r.to, field=f"relationships_new[{i}].to"),
        )
        for i, r in enumerate(data.relationships_new)
    ]
    uncertain_targets = []
    for i, u in enumerate(data.uncertain):
        if u.adopted:
            uncertain_targets.append(refs.resolve(u.adopted, field=f"uncertain[{i}].adopted"))
        else:
            uncertain_targets.append(None)

    # 2. New entities.
    created_ids: list[str] = []  # entities this chapter's extraction created (now or when first ingested)
    suggested_ids: set[str] = set()  # every entity an entities_new item stands for, matched ones too
    previously_created = set(previous.summary.get("created_entities", [])) if previous is not None else set()
    taken: set[str] = set()
    for i, item in enumerate(data.entities_new):
        field = f"entities_new[{i}]"
        band = _band(item.confidence)
        raw = payload["entities_new"][i]
        if band == "hold":
            refs.held.add(i)
            pending += _hold(
                book=book,
                chapter=chapter,
                kind=PendingItem.Kind.ENTITY_NEW,
                payload=raw,
                confidence=item.confidence,
                note=f"新实体 '{item.name}' 置信度低于 {WARN_FROM}",
                resolved=resolved,
            )
            continue
        entity, created = _entity_from_suggestion(book=book, chapter=chapter, item=item, taken=taken)
        taken.add(entity.entity_id)
        refs.created[i] = entity
        suggested_ids.add(entity.entity_id)
        if created or entity.entity_id in previously_created:
            created_ids.append(entity.entity_id)
        adopted["entities_new"] += 1
        if band == "warn":
            warn(
                field,
                item.confidence,
                f"新实体 '{item.name}'（{entity.entity_id}）置信度 {item.confidence}，已采用，请复核",
            )

    touched: set[int] = set()
    appearances: dict[int, tuple[Entity, int, list[str]]] = {}  # entity pk → (entity, count, aliases)

    def appear(entity: Entity, count: int, aliases: list[str] | None) -> None:
        _, total, names = appearances.get(entity.pk, (entity, 0, []))
        appearances[entity.pk] = (entity, total + count, names + list(aliases or []))

    # 3. Appearances reported by the agent.
    for i, (a, target) in enumerate(zip(data.entities_appeared, appeared_targets, strict=True)):
        field = f"entities_appeared[{i}]"
        entity = refs.entity(target)
        band = _band(a.confidence)
        count = len(a.mentions) if isinstance(a.mentions, list) else (a.mentions or 1)
        if band == "hold" or entity is None:
            pending += _hold(
                book=book,
                chapter=chapter,
                kind=PendingItem.Kind.ENTITY_APPEARED,
                payload=payload["entities_appeared"][i],
                confidence=a.confidence,
                note=_hold_note(a.confidence, entity),
                resolved=resolved,
            )
            continue
        appear(entity, count, a.mentions if isinstance(a.mentions, list) else None)
        touched.add(entity.pk)
        adopted["entities_appeared"] += 1
        if band == "warn":
            warn(field, a.confidence, f"出场 '{a.id}' 置信度 {a.confidence}，已采用，请复核")

    # 4. State changes, in payload order.
    seqs: dict[int, int] = {}
    for i, (c, target) in enumerate(zip(data.state_changes, change_targets, strict=True)):
        field = f"state_changes[{i}]"
        entity = refs.entity(target)
        band = _band(c.confidence)
        if band == "hold" or entity is None:
            pending += _hold(
                book=book,
                chapter=chapter,
                kind=PendingItem.Kind.STATE_CHANGE,
                payload=payload["state_changes"][i],
                confidence=c.confidence,
                note=_hold_note(c.confidence, entity),
                resolved=resolved,
            )
            continue
        before = selectors.entity_state_as_of(entity=entity, chapter=chapter).get(c.field)
        if c.old is not None and c.op == "set" and before is not None and before != c.old:
            warn(
                f"{field}.old",
                c.confidence,
                f"'{entity.entity_id}.{c.field}' 旧值 {c.old!r} 与重放得到的 {before!r} 不一致",
            )
        _state_change_insert(
            entity=entity,
            chapter=chapter,
            field=c.field,
            op=c.op,
            new=c.new,
            old=c.old if c.old is not None else before,
            reason=c.reason,
            confidence=c.confidence,
            source=StateChange.Source.EXTRACTION,
            where=field,
            seqs=seqs,
        )
        touched.add(entity.pk)
        adopted["state_changes"] += 1
        if band == "warn":
            warn(field, c.confidence, f"状态变更 {entity.entity_id}.{c.field} 置信度 {c.confidence}，已采用，请复核")

    # 5. Relationships.
    relationship_pks: set[int] = set()
    for i, (r, (src, dst)) in enumerate(zip(data.relationships_new, rel_targets, strict=True)):
        field = f"relationships_new[{i}]"
        from_entity, to_entity = refs.entity(src), refs.entity(dst)
        band = _band(r.confidence)
        if band == "hold" or from_entity is None or to_entity is None:
            pending += _hold(
                book=book,
                chapter=chapter,
                kind=PendingItem.Kind.RELATIONSHIP,
                payload=payload["relationships_new"][i],
                confidence=r.confidence,
                note=_hold_note(r.confidence, from_entity and to_entity),
                resolved=resolved,
            )
            continue
        rel = _relationship_event_add(
            from_entity=from_entity,
            to_entity=to_entity,
            type=r.type,
            description=r.description,
            chapter=chapter,
            source=RelationshipEvent.Source.EXTRACTION,
        )
        relationship_pks.add(rel.pk)
        adopted["relationships_new"] += 1
        if band == "warn":
            warn(field, r.confidence, f"关系 {r.from_}→{r.to}（{r.type}）置信度 {r.confidence}，已采用，请复核")
    relationship_summary_refresh(relationship_pks=relationship_pks)

    # 6. Uncertain mentions: an adopted candidate counts as an appearance; the rest wait for a human.
    for i, (u, target) in enumerate(zip(data.uncertain, uncertain_targets, strict=True)):
        field = f"uncertain[{i}]"
        entity = refs.entity(target) if target is not None else None
        band = _band(u.confidence if u.confidence is not None else (None if entity else 0.0))
        if entity is None or band == "hold":
            pending += _hold(
                book=book,
                chapter=chapter,
                kind=PendingItem.Kind.UNCERTAIN,
                payload=payload["uncertain"][i],
                confidence=u.confidence,
                note=f"'{u.mention}' 指代不确定，候选：{'、'.join(u.candidates) or '无'}",
                resolved=resolved,
            )
            continue
        appear(entity, 1, [u.mention])
        touched.add(entity.pk)
        adopted["uncertain"] += 1
        if band == "warn":
            warn(field, u.confidence, f"'{u.mention}' 判为 {entity.entity_id}，置信度 {u.confidence}，请复核")

    _appearances_write(chapter=chapter, source=Appearance.Source.EXTRACTION, appearances=list(appearances.values()))

    if previous is not None:
        _orphans_drop(book=book, entity_ids=previously_created, keep=suggested_ids)
    if adopted["entities_new"]:
        # New names: the deterministic scan of this chapter must see them at once (later chapters
        # see them when finalized; ``rescan_mentions`` redoes the earlier ones on demand).
        mentions_index(book=book, numbers=[chapter], removed=[])
    entity_appearance_refresh(entity_pks=touched | {e.pk for e in refs.created.values()})

    summary = {"adopted": dict(adopted), "pending": pending, "created_entities": created_ids}
    # Migrated chapter_meta (from an old state.json) stays under the agent's keys across re-ingests.
    migrated_meta = previous.summary.get("migrated_chapter_meta") if previous is not None else None
    if migrated_meta:
        summary["migrated_chapter_meta"] = migrated_meta
    values = {
        "payload": payload,
        "warnings": warnings,
        "scenes": [s.model_dump() for s in data.scenes],
        "chapter_meta": {**(migrated_meta or {}), **data.chapter_meta},
        "uncertain": [u.model_dump() for u in data.uncertain],
        "summary": summary,
        "source": "extraction",
    }
    # No update_or_create (a SAVEPOINT, a SELECT … FOR UPDATE and a RELEASE): ``previous`` was read
    # after the chapter's lock (PostgreSQL) or inside the single writer's transaction (SQLite).
    if previous is None:
        Extraction.objects.create(book=book, chapter=chapter, **values)
    else:
        for name, value in values.items():
            setattr(previous, name, value)
        previous.save(update_fields=[*values, "updated_at"])
    result = {
        "book": book.slug,
        "chapter": chapter,
        "adopted": {
            k: adopted.get(k, 0)
            for k in ("entities_new", "entities_appeared", "state_changes", "relationships_new", "uncertain")
        },
        "pending": pending,
        "warnings": warnings,
        "created_entities": created_ids,
        "replaced": previous is not None and previous.source == "extraction",
    }
    # The hook fills result["hook_failures"] after the commit, before the caller reads the result.
    after_chapter_hooks_schedule(book=book, numbers=[chapter], removed=[], report=result)
    return result


def _hold_note(confidence: float | None, entity: Any) -> str:
    if entity is None:
        return "引用的新实体仍在待确认队列中，请先确认该实体"
    return f"置信度 {confidence} 低于 {WARN_FROM}，未写入"


def _entity_from_suggestion(*, book: Book, chapter: int, item: Any, taken: set[str]) -> tuple[Entity, bool]:
    """The entity an entities_new item stands for, and whether it was created now: the existing one
    with this id, name and type (re-ingestion), else a new one with the suggested id or a fresh pinyin id."""
    aliases = [a if isinstance(a, str) else a.model_dump() for a in item.aliases]
    if item.suggested_id:
        existing = Entity.objects.filter(book=book, entity_id=item.suggested_id).first()
        if existing is not None and existing.canonical_name == item.name and existing.type == item.type:
            for alias in aliases:
                _alias_add_any(existing, alias, source="extraction")
            return existing, False
        entity_id = item.suggested_id if existing is None and item.suggested_id not in taken else None
    else:
        entity_id = None
    if entity_id is None:
        # Same name and type already known under another id: the agent re-suggested it.
        known = Entity.objects.filter(book=book, canonical_name=item.name, type=item.type).first()
        if known is not None:
            for alias in aliases:
                _alias_add_any(known, alias, source="extraction")
            return known, False
        entity_id = entity_id_generate(book=book, name=item.name, type=item.type, taken=taken)
    entity = _entity_create(
        book=book,
        name=item.name,
        type=item.type,
        tier=item.tier,
        description=item.desc,
        entity_id=entity_id,
        aliases=aliases,
        base_state=item.state,
        first_appearance=chapter,
        source="extraction",
    )
    return entity, True


def _alias_add_any(entity: Entity, alias: str | dict, *, source: str) -> None:
    fields = {"alias": alias} if isinstance(alias, str) else dict(alias)
    if source == "extraction" and alias_is_generic(str(fields.get("alias", ""))):
        # an agent's 他 / 少年 / 老者 names the entity only weakly, as in the migration of old projects
        fields["generic"] = True
    _alias_add(entity=entity, source=source, **fields)


def _appearance_add(*, entity: Entity, chapter: int, count: int, source: str, aliases: list[str] | None) -> Appearance:
    row, created = Appearance.objects.get_or_create(
        entity=entity,
        chapter=chapter,
        source=source,
        defaults={"book_id": entity.book_id, "count": count, "aliases": _alias_counts(aliases)},
    )
    if not created:
        _appearance_merge(row, count=count, aliases=aliases)
    return row


def _appearance_merge(row: Appearance, *, count: int, aliases: list[str] | None) -> None:
    """Add another count and its aliases to an appearance row already there, and save it."""
    row.count += count
    merged = dict(row.aliases)
    for alias, n in _alias_counts(aliases).items():
        merged[alias] = merged.get(alias, 0) + n
    row.aliases = merged
    row.save(update_fields=["count", "aliases"])


def _appearances_write(*, chapter: int, source: str, appearances: list[tuple[Entity, int, list[str]]]) -> None:
    """``_appearance_add`` of several entities at one chapter: one query for the rows already there,
    one INSERT for the new ones (was a SELECT, SAVEPOINT, INSERT and RELEASE per entity)."""
    if not appearances:
        return
    existing = {
        row.entity_id: row
        for row in Appearance.objects.filter(
            entity_id__in=[e.pk for e, _, _ in appearances], chapter=chapter, source=source
        )
    }
    new = []
    for entity, count, aliases in appearances:
        row = existing.get(entity.pk)
        if row is None:
            new.append(
                Appearance(
                    book_id=entity.book_id,
                    entity=entity,
                    chapter=chapter,
                    source=source,
                    count=count,
                    aliases=_alias_counts(aliases),
                )
            )
            continue
        _appearance_merge(row, count=count, aliases=aliases)
    Appearance.objects.bulk_create(new)


def _alias_counts(aliases: list[str] | None) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for alias in aliases or []:
        counts[alias] += 1
    return dict(counts)


@transaction.atomic
def entities_archive(*, entities: Iterable[Entity], archived: bool) -> int:
    """Archive (or unarchive) entities; returns how many changed."""
    pks = [e.pk for e in entities]
    return Entity.objects.filter(pk__in=pks).exclude(archived=archived).update(archived=archived)


@transaction.atomic
def aliases_generic_set(*, aliases: Iterable[Alias], generic: bool) -> dict[str, int]:
    """Mark aliases generic (weak mentions) or plain, then rescan the affected books. Aliases from the
    book's files are left alone (the next sync would undo it): they are marked in 名册 / the card."""
    pks = [a.pk for a in aliases]
    rows = Alias.objects.filter(pk__in=pks)
    file_owned = rows.filter(source="file").count()
    changed_rows = rows.exclude(source="file").exclude(generic=generic)
    books = set(changed_rows.values_list("book_id", flat=True))
    changed = changed_rows.update(generic=generic)
    for book in Book.objects.filter(pk__in=books):
        matcher_invalidate(book_id=book.pk)  # .update() sends no signals
        mentions_index(book=book, numbers=None)
    return {"changed": changed, "file_owned": file_owned}


# --- curation: pending queue and merge -------------------------------------------------------------


def _payload_ref(item: PendingItem, key: str) -> str | None:
    value = item.payload.get(key)
    return value if isinstance(value, str) and value else None


@transaction.atomic
def pending_item_confirm(*, item: PendingItem, entity: Entity | None = None) -> dict:
    """Confirm a held item and apply its write. ``entity`` picks an existing entity (for a new-entity
    suggestion: the suggestion becomes its alias; for an uncertain mention: the one it names);
    without it a new-entity suggestion is created as suggested."""
    book_write_lock(book=item.book)  # before the item's row: the order every writer of the book uses
    item = PendingItem.objects.select_for_update().get(pk=item.pk)
    if item.status != PendingItem.Status.PENDING:
        raise Conflict(f"待确认项 #{item.pk} 已处理（{item.get_status_display()}）", extra={"pk": item.pk})
    book, chapter, payload = item.book, item.chapter, item.payload
    result: dict[str, Any] = {"pk": item.pk, "kind": item.kind}
    if item.kind == PendingItem.Kind.ENTITY_NEW:
        data = _validate({"entities_new": [payload]}).entities_new[0]
        if entity is not None:
            for alias in [data.name, *[a if isinstance(a, str) else a.model_dump() for a in data.aliases]]:
                _alias_add_any(entity, alias, source="curation")
            target = entity
        else:
            target, _ = _entity_from_suggestion(book=book, chapter=chapter or 0, item=data, taken=set())
            Entity.objects.filter(pk=target.pk, source="extraction").update(source="curation")
        if chapter is not None and Chapter.objects.filter(book=book, number=chapter).exists():
            mentions_index(book=book, numbers=[chapter], removed=[])
        result["entity"] = target.entity_id
    elif item.kind == PendingItem.Kind.STATE_CHANGE:
        data = _validate({"state_changes": [payload]}).state_changes[0]
        target = entity or _pending_resolve(book, data.entity_id, chapter, "entity_id")
        state_change_record(
            entity=target,
            chapter=chapter or 0,
            field=data.field,
            op=data.op,
            new=data.new,
            old=data.old,
            reason=data.reason,
            confidence=data.confidence,
            source=StateChange.Source.CURATION,
        )
        result["entity"] = target.entity_id
    elif item.kind == PendingItem.Kind.RELATIONSHIP:
        data = _validate({"relationships_new": [payload]}).relationships_new[0]
        src = _pending_resolve(book, data.from_, chapter, "from")
        dst = entity or _pending_resolve(book, data.to, chapter, "to")
        rel = relationship_record(
            from_entity=src,
            to_entity=dst,
            type=data.type,
            description=data.description,
            chapter=chapter,
            source=RelationshipEvent.Source.CURATION,
        )
        result["relationship"] = [src.entity_id, rel.type, dst.entity_id]
    elif item.kind == PendingItem.Kind.ENTITY_DISCOVERED:
        if entity is not None:
            for alias in discovery_names(item=item):
                _alias_add_any(
                    entity, {"alias": alias["alias"], "generic": bool(alias.get("generic"))}, source="curation"
                )
            result["entity"] = entity.entity_id
        else:
            result |= discovery_confirm(item=item)
    elif item.kind in {PendingItem.Kind.ENTITY_APPEARED, PendingItem.Kind.UNCERTAIN, PendingItem.Kind.DISAMBIGUATION}:
        ref = _payload_ref(item, "id") or _payload_ref(item, "adopted") or _payload_ref(item, "entity_id")
        if entity is None and ref is None:
            raise InvalidInput(f"待确认项 #{item.pk} 需要选择一个实体", extra={"pk": item.pk})
        target = entity or _pending_resolve(book, ref, chapter, "id")
        if chapter is not None:
            mention = payload.get("mention")
            _appearance_add(
                entity=target,
                chapter=chapter,
                count=1,
                source=Appearance.Source.CURATION,
                aliases=[mention] if isinstance(mention, str) else None,
            )
            entity_appearance_refresh(entity_pks=[target.pk])
        result["entity"] = target.entity_id
    item.status = PendingItem.Status.CONFIRMED
    item.resolution = result
    item.resolved_at = timezone.now()
    item.save(update_fields=["status", "resolution", "resolved_at"])
    return result


def _pending_resolve(book: Book, ref: str, chapter: int | None, field: str) -> Entity:
    """Within a chapter's held items a reference may name a new-entity suggestion of the same chapter
    (by suggested_id or name): once confirmed, that is the entity it became (perhaps under another
    id). Otherwise an entity by id or alias."""
    confirmed = PendingItem.objects.filter(
        book=book, chapter=chapter, kind=PendingItem.Kind.ENTITY_NEW, status=PendingItem.Status.CONFIRMED
    )
    for item in confirmed.order_by("-resolved_at", "-pk"):
        if ref in (item.payload.get("suggested_id"), item.payload.get("name")) and item.resolution.get("entity"):
            entity = Entity.objects.filter(book=book, entity_id=item.resolution["entity"]).first()
            if entity is not None:
                return entity
    try:
        return selectors.entity_get(book=book, ref=ref)
    except NotFound:
        raise InvalidInput(
            f"{field}: 未知实体 '{ref}'，请先确认对应的新实体或选择一个已有实体", extra={"field": field, "ref": ref}
        ) from None


@transaction.atomic
def pending_item_reject(*, item: PendingItem, note: str = "") -> dict:
    """Reject a held item: nothing is written, and a re-ingest of the chapter does not re-queue it."""
    book_write_lock(book=item.book)  # before the item's row: the order every writer of the book uses
    item = PendingItem.objects.select_for_update().get(pk=item.pk)
    if item.status != PendingItem.Status.PENDING:
        raise Conflict(f"待确认项 #{item.pk} 已处理（{item.get_status_display()}）", extra={"pk": item.pk})
    if item.kind == PendingItem.Kind.ENTITY_DISCOVERED:
        discovery_reject_record(item=item, note=note)
    item.status = PendingItem.Status.REJECTED
    item.resolution = {"note": note}
    item.resolved_at = timezone.now()
    item.save(update_fields=["status", "resolution", "resolved_at"])
    return {"pk": item.pk, "kind": item.kind, "status": item.status}


@transaction.atomic
def pending_items_bulk(*, items: Iterable[PendingItem], action: str, entity: Entity | None = None) -> dict[str, Any]:
    """Confirm (as suggested, or as ``entity``) or reject many items; returns counts of done and failed
    items with the reasons (each item is its own savepoint: one failure does not undo the others)."""
    done = failed = 0
    errors: list[str] = []
    for item in items:
        try:
            with transaction.atomic():
                if action == "confirm":
                    pending_item_confirm(item=item, entity=entity)
                else:
                    pending_item_reject(item=item)
            done += 1
        except (InvalidInput, NotFound, Ambiguous, Conflict) as exc:
            failed += 1
            errors.append(f"#{item.pk}: {exc.message}")
    return {"done": done, "failed": failed, "errors": errors}


@transaction.atomic
def entity_merge(*, source: Entity, target: Entity) -> dict[str, int]:
    """Merge ``source`` into ``target``: aliases, appearances, state changes and relationships move;
    the source's name and id become aliases of the target; the source is deleted."""
    if source.pk == target.pk:
        raise InvalidInput("不能把实体合并到它自己", extra={"id": source.entity_id})
    if source.book_id != target.book_id:
        raise InvalidInput("只能合并同一本书的实体", extra={"source": source.entity_id, "target": target.entity_id})
    book_write_lock(book=source.book)
    counts = dict.fromkeys(("aliases", "appearances", "state_changes", "relationships", "relationships_dropped"), 0)
    for alias in source.aliases.all():
        if (
            alias_add(
                entity=target,
                alias=alias.alias,
                valid_from=alias.valid_from,
                valid_to=alias.valid_to,
                note=alias.note,
                source=alias.source,
            )
            is not None
        ):
            counts["aliases"] += 1
    for name in (source.canonical_name, source.entity_id):
        if name != target.canonical_name and alias_add(
            entity=target, alias=name, note=f"合并自 {source.entity_id}", source="curation"
        ):
            counts["aliases"] += 1
    for row in source.appearances.all():
        existing = Appearance.objects.filter(entity=target, chapter=row.chapter, source=row.source).first()
        if existing is None:
            row.entity = target
            row.save(update_fields=["entity"])
        else:
            existing.count += row.count
            offsets = [o for o in (existing.first_offset, row.first_offset) if o is not None]
            existing.first_offset = min(offsets) if offsets else None
            merged = dict(existing.aliases)
            for alias, n in row.aliases.items():
                merged[alias] = merged.get(alias, 0) + n
            existing.aliases = merged
            existing.save(update_fields=["count", "first_offset", "aliases"])
            row.delete()
        counts["appearances"] += 1
    counts["state_changes"] = source.state_changes.update(entity=target)
    for key, value in source.base_state.items():
        target.base_state.setdefault(key, value)
    rel_pks = set()
    moving = Relationship.objects.filter(Q(from_entity=source) | Q(to_entity=source)).order_by("pk")
    for rel in list(moving.select_related("from_entity", "to_entity")):
        new_from = target if rel.from_entity_id == source.pk else rel.from_entity
        new_to = target if rel.to_entity_id == source.pk else rel.to_entity
        if new_from.pk == new_to.pk:
            # A relationship between the two merged entities would point at itself: dropped.
            rel.delete()
            counts["relationships_dropped"] += 1
            continue
        clash = (
            Relationship.objects.filter(from_entity=new_from, to_entity=new_to, type=rel.type)
            .exclude(pk=rel.pk)
            .first()
        )
        if clash is not None:
            rel.events.update(relationship=clash)
            rel.delete()
            rel_pks.add(clash.pk)
        else:
            rel.from_entity, rel.to_entity = new_from, new_to
            rel.save(update_fields=["from_entity", "to_entity"])
            rel_pks.add(rel.pk)
        counts["relationships"] += 1
    relationship_summary_refresh(relationship_pks=rel_pks)
    target.is_protagonist = target.is_protagonist or source.is_protagonist
    if not target.description:
        target.description = source.description
    target.save(update_fields=["base_state", "is_protagonist", "description"])
    source.delete()
    entity_appearance_refresh(entity_pks=[target.pk])
    return counts
