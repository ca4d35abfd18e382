"""The pending queue: a curator confirms a held write (applied through the primitive writes; the
chapters where a name it adds occurs are rescanned), rejects it, or does either to many at once. Above ``entities.mentions``."""

import json
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.journal import journal_append, journal_lock
from core.models import Book
from entities import selectors
from entities.discovery.services import discovery_confirm, discovery_names, discovery_reject_record
from entities.mentions import mentions_names_after, mentions_names_before
from entities.models import Appearance, Entity, PendingItem, RelationshipEvent, StateChange
from entities.payload import extraction_validate
from entities.services.writes import (
    aliases_add,
    appearance_add,
    entity_appearance_refresh,
    entity_from_suggestion,
    relationship_record,
    state_change_record,
)
from kernel.exceptions import Ambiguous, Conflict, InvalidInput, NotFound


def _journaled(item: PendingItem) -> bool:
    """Decisions on an extraction's held items and on discovery's proposals (whose queue is journaled
    too: ``discovery.queue``) go into the journal; a migrated item comes from ``migrate_state``."""
    return item.source in ("extraction", "discovery")


def pending_item_key(*, item: PendingItem) -> dict[str, Any]:
    """The stable identity of a held item in the journal: its chapter, kind and payload (a database id
    changes with every rebuild; the same extraction holds the same items in the same order); an
    extraction's item carries its note too (``held``), so a decision can bring back the item it decided
    (``pending_item_restore``)."""
    key = {"chapter": item.chapter, "kind": item.kind, "payload": item.payload}
    return key | {"held": item.note} if item.source == "extraction" else key


def pending_item_restore(*, book: Book, key: dict[str, Any]) -> PendingItem:
    """The extraction's held item a journaled decision (``key``: its event) names, queued again where
    the author has since edited the extraction that held it: a rebuild ingests the edited file, which
    no longer holds it, while the live database kept the decided item and what the decision wrote. The
    decision is then applied to it, as it was live."""
    payload = key["payload"]
    confidence = payload.get("confidence") if isinstance(payload, dict) else None
    return PendingItem.objects.create(
        book=book,
        chapter=key["chapter"],
        kind=key["kind"],
        payload=payload,
        confidence=confidence if isinstance(confidence, int | float) else None,
        note=key.get("held", ""),
        source="extraction",
    )


def pending_item_find(*, book: Book, number: int | None, kind: str, payload: dict) -> PendingItem:
    """The first pending item of ``book`` with this key (identical items: the oldest first)."""
    wanted = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)
    for item in PendingItem.objects.filter(
        book=book, chapter=number, kind=kind, status=PendingItem.Status.PENDING
    ).order_by("pk"):
        if json.dumps(item.payload, ensure_ascii=False, sort_keys=True, default=str) == wanted:
            return item
    raise NotFound(f"第{number}章没有与日志记录一致的待确认项（{kind}）", extra={"chapter": number, "kind": kind})


def _payload_ref(item: PendingItem, key: str) -> str | None:
    value = item.payload.get(key)
    return value if isinstance(value, str) and value else None


@transaction.atomic
def pending_item_confirm(*, item: PendingItem, entity: Entity | None = None, journal: bool = True) -> dict:
    """Confirm a held item and apply its write. ``entity`` picks an existing entity (for a new-entity
    suggestion: the suggestion becomes its alias; for an uncertain mention: the one it names);
    without it a new-entity suggestion is created as suggested. Journaled (``pending.confirm``)."""
    # before the item's row: the order every writer of the book uses (and a crashed writer's event first)
    journal_lock(book=item.book, heal=journal)
    item = PendingItem.objects.select_for_update().get(pk=item.pk)
    if item.status != PendingItem.Status.PENDING:
        raise Conflict(f"待确认项 #{item.pk} 已处理（{item.get_status_display()}）", extra={"pk": item.pk})
    book, chapter, payload = item.book, item.chapter, item.payload
    result: dict[str, Any] = {"pk": item.pk, "kind": item.kind}
    # names given to an entity: the chapters where they occur are rescanned (entities.mentions)
    naming = item.kind in {PendingItem.Kind.ENTITY_NEW, PendingItem.Kind.ENTITY_DISCOVERED}
    names_before = mentions_names_before(book=book) if naming else None
    if item.kind == PendingItem.Kind.ENTITY_NEW:
        data = extraction_validate({"entities_new": [payload]}).entities_new[0]
        if entity is not None:
            aliases = [data.name, *[a if isinstance(a, str) else a.model_dump() for a in data.aliases]]
            aliases_add(entity=entity, aliases=aliases, source="curation")
            target = entity
        else:
            target, _ = entity_from_suggestion(book=book, number=chapter or 0, item=data, taken=set())
            Entity.objects.filter(pk=target.pk, source="extraction").update(source="curation")
        result["entity"] = target.entity_id
    elif item.kind == PendingItem.Kind.STATE_CHANGE:
        data = extraction_validate({"state_changes": [payload]}).state_changes[0]
        target = entity or _pending_resolve(book, data.entity_id, chapter, "entity_id")
        state_change_record(
            entity=target,
            number=chapter or 0,
            field=data.field,
            op=data.op,
            new=data.new,
            old=data.old,
            reason=data.reason,
            confidence=data.confidence,
            source=StateChange.Source.CURATION,
        )
        entity_appearance_refresh(entity_pks=[target.pk])  # as state_change_curate
        result["entity"] = target.entity_id
    elif item.kind == PendingItem.Kind.RELATIONSHIP:
        data = extraction_validate({"relationships_new": [payload]}).relationships_new[0]
        src = _pending_resolve(book, data.from_, chapter, "from")
        dst = entity or _pending_resolve(book, data.to, chapter, "to")
        rel = relationship_record(
            from_entity=src,
            to_entity=dst,
            type=data.type,
            description=data.description,
            number=chapter,
            source=RelationshipEvent.Source.CURATION,
        )
        result["relationship"] = [src.entity_id, rel.type, dst.entity_id]
    elif item.kind == PendingItem.Kind.ENTITY_DISCOVERED:
        if entity is not None:
            aliases = [{"alias": a["alias"], "generic": bool(a.get("generic"))} for a in discovery_names(item=item)]
            aliases_add(entity=entity, aliases=aliases, source="curation")
            result["entity"] = entity.entity_id
        else:
            result |= discovery_confirm(item=item, write=journal)
    elif item.kind in {PendingItem.Kind.ENTITY_APPEARED, PendingItem.Kind.UNCERTAIN, PendingItem.Kind.DISAMBIGUATION}:
        ref = _payload_ref(item, "id") or _payload_ref(item, "adopted") or _payload_ref(item, "entity_id")
        if entity is None and ref is None:
            raise InvalidInput(f"待确认项 #{item.pk} 需要选择一个实体", extra={"pk": item.pk})
        target = entity or _pending_resolve(book, ref, chapter, "id")
        if chapter is not None:
            mention = payload.get("mention")
            appearance_add(
                entity=target,
                number=chapter,
                count=1,
                source=Appearance.Source.CURATION,
                aliases=[mention] if isinstance(mention, str) else None,
            )
            entity_appearance_refresh(entity_pks=[target.pk])
        result["entity"] = target.entity_id
    mentions_names_after(book=book, before=names_before)
    item.status = PendingItem.Status.CONFIRMED
    # what the roster write did ("added", "note", "next") is the answer's, not the item's: a replay,
    # which leaves the roster as the author has it, stores the same resolution
    item.resolution = {k: v for k, v in result.items() if k not in ("added", "note", "next")}
    item.resolved_at = timezone.now()
    item.save(update_fields=["status", "resolution", "resolved_at"])
    if journal and _journaled(item):
        journal_append(
            book=book,
            op="pending.confirm",
            **pending_item_key(item=item),
            entity=entity.entity_id if entity is not None else None,
        )
    return result


def _pending_resolve(book: Book, ref: str, number: int | None, field: str) -> Entity:
    """Within a chapter's held items a reference may name a new-entity suggestion of the same chapter
    (by suggested_id or name): once confirmed, that is the entity it became (perhaps under another
    id). Otherwise an entity by id or alias."""
    confirmed = PendingItem.objects.filter(
        book=book, chapter=number, kind=PendingItem.Kind.ENTITY_NEW, status=PendingItem.Status.CONFIRMED
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
def pending_item_reject(*, item: PendingItem, note: str = "", journal: bool = True) -> dict:
    """Reject a held item: nothing is written, and a re-ingest of the chapter does not re-queue it.
    Journaled (``pending.reject``)."""
    journal_lock(book=item.book, heal=journal)  # before the item's row, as pending_item_confirm
    item = PendingItem.objects.select_for_update().get(pk=item.pk)
    if item.status != PendingItem.Status.PENDING:
        raise Conflict(f"待确认项 #{item.pk} 已处理（{item.get_status_display()}）", extra={"pk": item.pk})
    if item.kind == PendingItem.Kind.ENTITY_DISCOVERED and journal:
        discovery_reject_record(item=item, note=note)  # a replay leaves the rejected list as it is
    item.status = PendingItem.Status.REJECTED
    item.resolution = {"note": note}
    item.resolved_at = timezone.now()
    item.save(update_fields=["status", "resolution", "resolved_at"])
    if journal and _journaled(item):
        journal_append(book=item.book, op="pending.reject", **pending_item_key(item=item), note=note)
    return {"pk": item.pk, "kind": item.kind, "status": item.status, "note": note}


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
