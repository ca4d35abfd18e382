"""The primitive writes of the entities app: ids, entities and aliases, state changes, relationships,
appearances and their first / last summaries, archiving and merging. Every public service is atomic,
keyword-only, and raises domain exceptions (NotFound / Ambiguous / InvalidInput) with a Chinese
message naming what was wrong and where.

The bottom of the app's write layers: ``entities.tags`` (the author's tags), ``entities.mentions``
(the scan), then ``ingest`` and ``pending`` build on these, never the other way round.

Provenance is kept on every row (``source``): a re-ingested chapter replaces only the rows its own
previous extraction wrote, so curated, tagged and migrated data survive re-ingestion and rebuilds.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction
from django.db.models import Max, Min

from core.journal import journal_append, journal_lock
from core.models import Book
from entities import selectors
from entities.generic import alias_is_generic
from entities.ids import entity_id_base, entity_ids_assign
from entities.models import (
    Alias,
    Appearance,
    Entity,
    Relationship,
    RelationshipEvent,
    StateChange,
    TagApplication,
)
from entities.state_ops import OPS, is_number
from kernel.bulk import rows_update
from kernel.exceptions import InvalidInput

# --- ids --------------------------------------------------------------------------------------


def entity_id_generate(
    *, book: Book, name: str, type: str, taken: set[str] | None = None, ids: set[str] | None = None
) -> str:
    """A fresh pinyin id for ``name`` of ``type`` in ``book``: ``_1``, ``_2`` … on collision. ``ids``: a
    superset of the book's entity ids (one not in it is free without a query)."""
    base = entity_id_base(name=name, type=type)
    if base not in (taken or ()) and (
        (ids is not None and base not in ids) or not Entity.objects.filter(book=book, entity_id=base).exists()
    ):
        # the usual case, on the (book, entity_id) index: ``startswith`` is LIKE 'base%', which SQLite
        # (its LIKE folds case) answers by reading every entity of the book
        return base
    existing = set(Entity.objects.filter(book=book, entity_id__startswith=base).values_list("entity_id", flat=True))
    return entity_ids_assign([(name, type, "")], taken=existing | (taken or set()))[0]


# --- entities and aliases -----------------------------------------------------------------------


# ``_entity_create`` and ``_alias_add`` are the bodies of the public atomic services (``entity_create =
# transaction.atomic(_entity_create)``), and ``state_change_insert``, ``relationship_event_add``,
# ``appearance_add`` / ``appearances_write`` and ``aliases_add`` write without a transaction of their
# own, for callers that already hold one (extraction_ingest, pending_item_confirm): a nested
# ``atomic`` is a SAVEPOINT and a RELEASE, two more round trips per row on PostgreSQL, and nothing
# there ever rolls back to one.


def _entity_create(
    *,
    book: Book,
    name: str,
    type: str,
    tier: str = Entity.Tier.DECOR,
    description: str = "",
    entity_id: str | None = None,
    aliases: Iterable[str | dict] = (),
    base_state: dict | None = None,
    is_protagonist: bool = False,
    first_appearance: int | None = None,
    source: str = "admin",
    id_free: bool = False,
) -> Entity:
    """Create an entity (pinyin id unless given) with its aliases. ``id_free``: the caller has just
    looked that ``entity_id`` is not taken (``entity_from_suggestion``), so it is not looked up again."""
    if type not in Entity.Type.values:
        raise InvalidInput(f"未知的实体类型 '{type}'，可选 {'/'.join(Entity.Type.values)}", extra={"type": type})
    if tier not in Entity.Tier.values:
        raise InvalidInput(f"未知的层级 '{tier}'，可选 {'/'.join(Entity.Tier.values)}", extra={"tier": tier})
    if entity_id and not id_free and Entity.objects.filter(book=book, entity_id=entity_id).exists():
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
    _aliases_new(entity=entity, aliases=aliases, source=source)
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
    alias = _alias_checked(
        entity=entity, alias=alias, valid_from=valid_from, valid_to=valid_to, note=note, generic=generic
    )
    if alias is None:
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


def _alias_checked(
    *, entity: Entity, alias: str, valid_from: int | None, valid_to: int | None, note: str, generic: bool
) -> str | None:
    """The alias stripped, None when it adds nothing (the canonical name, no window, no note), or
    InvalidInput for an empty one, an inverted window or a generic canonical name."""
    alias = alias.strip()
    if not alias:
        raise InvalidInput("别名不能为空", extra={"entity": entity.entity_id})
    if valid_from is not None and valid_to is not None and valid_from > valid_to:
        raise InvalidInput(f"别名 '{alias}' 的有效区间无效：from {valid_from} > to {valid_to}", extra={"alias": alias})
    if alias == entity.canonical_name and generic:
        raise InvalidInput(f"正名 '{alias}' 不能标为泛称", extra={"entity": entity.entity_id, "alias": alias})
    if alias == entity.canonical_name and valid_from is None and valid_to is None and not note:
        return None
    return alias


def entity_appearance_refresh(*, entity_pks: Iterable[int]) -> None:
    """Recompute first/last appearance of these entities from their appearance rows (for one with none,
    not from a file: the chapters whose tags name it, else what its creator recorded)."""
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
    entities = list(Entity.objects.filter(pk__in=pks))
    tagged = _tagged_spans(entities=[e for e in entities if e.pk not in spans and e.source != "file"])
    moved = []
    for entity in entities:
        first, last = spans.get(entity.pk, tagged.get(entity.pk, (None, None)))
        if first is None and entity.source == "admin":
            # A curator's entity never seen in text records nothing: it starts at its first state
            # change, read from the rows (never from what an earlier refresh left, which a rebuild
            # into an empty database does not see)
            first, last = first_change.get(entity.pk), None
        elif first is None and entity.source != "file":
            # Entities never seen in text keep what their creator recorded (migration, suggestion).
            first, last = entity.first_appearance or first_change.get(entity.pk), entity.last_appearance
        if (entity.first_appearance, entity.last_appearance) != (first, last):
            moved.append({"pk": entity.pk, "first_appearance": first, "last_appearance": last})
    # one executemany: a rebuild moves every entity's span (1,000 UPDATEs one by one: ~0.1 s)
    rows_update(Entity, moved, ["first_appearance", "last_appearance"])


def _tagged_spans(*, entities: list[Entity]) -> dict[int, tuple[int, int]]:
    """The first and last chapters whose manual tags name each of ``entities`` (``TagApplication``):
    where an entity is tagged it appears, even when the scan finds no mention of it (its name is
    ambiguous, say). Read from the chapters' rows, never from what an earlier scan left on the entity,
    so a live book and a rebuild of its folder agree (issue 24)."""
    if not entities:
        return {}
    by_key = {(e.book_id, f"entity:{e.entity_id}"): e.pk for e in entities}
    out: dict[int, tuple[int, int]] = {}
    rows = TagApplication.objects.filter(book_id__in={e.book_id for e in entities}).exclude(applied=[])
    for book_id, chapter, applied in rows.values_list("book_id", "chapter", "applied").iterator(chunk_size=500):
        for item in applied:
            pk = by_key.get((book_id, item))
            if pk is not None:
                first, last = out.get(pk, (chapter, chapter))
                out[pk] = (min(first, chapter), max(last, chapter))
    return out


# --- state changes -----------------------------------------------------------------------------


def state_change_check(
    *, entity: Entity, number: int, field: str, op: str, new: Any, where: str = "state_change"
) -> None:
    """Raise InvalidInput (naming ``where``) when the change cannot be recorded."""
    if op not in OPS:
        raise InvalidInput(f"{where}.op: 未知操作 '{op}'，可选 {'/'.join(OPS)}", extra={"field": f"{where}.op"})
    if number is None or number < 0:
        raise InvalidInput(f"{where}.chapter: 章节号无效", extra={"field": f"{where}.chapter"})
    if op in {"set", "add", "remove"} and new is None:
        raise InvalidInput(f"{where}.new: {op} 需要 new 值", extra={"field": f"{where}.new"})
    if op == "inc":
        if not is_number(new):
            raise InvalidInput(f"{where}.new: inc 的增量必须是数字，收到 {new!r}", extra={"field": f"{where}.new"})
        current = selectors.entity_state_as_of(entity=entity, number=number).get(field)
        if current is not None and not is_number(current):
            raise InvalidInput(
                f"{where}.field: '{field}' 当前值 {current!r} 不是数字，不能 inc",
                extra={"field": f"{where}.field", "current": current},
            )


@transaction.atomic
def state_change_record(
    *,
    entity: Entity,
    number: int,
    field: str,
    op: str = "set",
    new: Any = None,
    old: Any = None,
    reason: str = "",
    confidence: float | None = None,
    source: str = StateChange.Source.CURATION,
    where: str = "state_change",
) -> StateChange:
    """Record one change of one field at ``number`` (after the chapter's existing changes)."""
    return state_change_insert(
        entity=entity,
        number=number,
        field=field,
        op=op,
        new=new,
        old=old,
        reason=reason,
        confidence=confidence,
        source=source,
        where=where,
    )


@transaction.atomic
def state_change_curate(
    *,
    entity: Entity,
    number: int,
    field: str,
    op: str = "set",
    new: Any = None,
    old: Any = None,
    reason: str = "",
    journal: bool = True,
) -> StateChange:
    """A curator's change of one field at ``number`` (the admin): ``state_change_record`` with source
    curation, journaled (``state_change.record``) so a rebuild brings it back."""
    journal_lock(book=entity.book, heal=journal)
    row = state_change_insert(
        entity=entity,
        number=number,
        field=field,
        op=op,
        new=new,
        old=old,
        reason=reason,
        confidence=None,
        source=StateChange.Source.CURATION,
        where="state_change",
    )
    # its span follows (an entity never seen in text starts at its first state change), as an edit's
    entity_appearance_refresh(entity_pks=[entity.pk])
    if journal:
        journal_append(
            book=entity.book,
            op="state_change.record",
            entity=entity.entity_id,
            chapter=number,
            field=field,
            change=op,
            new=new,
            old=old,
            reason=reason,
        )
    return row


def state_change_insert(
    *,
    entity: Entity,
    number: int,
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
    """``seqs`` (entity pk → last seq at ``number``) spares the MAX(seq) query for an entity whose
    changes at this chapter this caller has already written."""
    state_change_check(entity=entity, number=number, field=field, op=op, new=new, where=where)
    if seqs is not None and entity.pk in seqs:
        seq = seqs[entity.pk] + 1
    else:
        seq = (StateChange.objects.filter(entity=entity, chapter=number).aggregate(m=Max("seq"))["m"] or 0) + 1
    if seqs is not None:
        seqs[entity.pk] = seq
    return StateChange.objects.create(
        book_id=entity.book_id,
        entity=entity,
        chapter=number,
        seq=seq,
        field=field,
        op=op,
        old=old,
        new=new,
        reason=reason,
        confidence=confidence,
        source=source,
    )


def state_changes_renumber(*, rows: Iterable[StateChange], rank: Callable[[StateChange], int]) -> int:
    """Number each entity's ``rows`` (all at one chapter) 1, 2, … in (``rank``, seq, pk) order, the order a
    replay of the folder and its journal gives them; returns how many moved."""
    by_entity: dict[int, list[StateChange]] = defaultdict(list)
    for row in rows:
        by_entity[row.entity_id].append(row)
    moved = []
    for group in by_entity.values():
        for seq, row in enumerate(sorted(group, key=lambda r: (rank(r), r.seq, r.pk)), start=1):
            if row.seq != seq:
                row.seq = seq
                moved.append(row)
    if moved:
        StateChange.objects.bulk_update(moved, ["seq"])
    return len(moved)


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
    number: int | None = None,
    source: str = RelationshipEvent.Source.CURATION,
) -> Relationship:
    """Create the (from, to, type) relationship or add an event to it."""
    rel = relationship_event_add(
        from_entity=from_entity, to_entity=to_entity, type=type, description=description, number=number, source=source
    )
    relationship_summary_refresh(relationship_pks=[rel.pk])
    rel.refresh_from_db()
    return rel


def relationship_event_add(
    *, from_entity: Entity, to_entity: Entity, type: str, description: str, number: int | None, source: str
) -> Relationship:
    """The event only: the caller refreshes the relationship's summary (once for all its events)."""
    if from_entity.book_id != to_entity.book_id:
        raise InvalidInput("关系两端必须属于同一本书", extra={"from": from_entity.entity_id, "to": to_entity.entity_id})
    if not type.strip():
        raise InvalidInput("关系类型不能为空", extra={"from": from_entity.entity_id, "to": to_entity.entity_id})
    rel, _ = Relationship.objects.get_or_create(
        from_entity=from_entity, to_entity=to_entity, type=type.strip(), defaults={"book_id": from_entity.book_id}
    )
    RelationshipEvent.objects.create(relationship=rel, chapter=number, description=description, source=source)
    return rel


# --- suggestions and appearances ---------------------------------------------------------------


def entity_from_suggestion(
    *,
    book: Book,
    number: int,
    item: Any,
    taken: set[str],
    names: set[tuple[str, str]] | None = None,
    ids: set[str] | None = None,
) -> tuple[Entity, bool]:
    """The entity an entities_new item stands for, and whether it was created now: the existing one
    with this id, name and type (re-ingestion), else a new one with the suggested id or a fresh pinyin id.

    ``names`` / ``ids`` (a replay's ``IngestKnown``): supersets of the book's entities' (name, type)
    and ids — one not in them is not looked up — which the entity created here is added to."""
    aliases = [a if isinstance(a, str) else a.model_dump() for a in item.aliases]
    if item.suggested_id:
        existing = (
            Entity.objects.filter(book=book, entity_id=item.suggested_id).first()
            if ids is None or item.suggested_id in ids
            else None
        )
        if existing is not None and existing.canonical_name == item.name and existing.type == item.type:
            aliases_add(entity=existing, aliases=aliases, source="extraction")
            return existing, False
        entity_id = item.suggested_id if existing is None and item.suggested_id not in taken else None
    else:
        entity_id = None
    if entity_id is None:
        # Same name and type already known under another id: the agent re-suggested it.
        known = (
            Entity.objects.filter(book=book, canonical_name=item.name, type=item.type).first()
            if names is None or (item.name, item.type) in names
            else None
        )
        if known is not None:
            aliases_add(entity=known, aliases=aliases, source="extraction")
            return known, False
        entity_id = entity_id_generate(book=book, name=item.name, type=item.type, taken=taken, ids=ids)
    entity = _entity_create(
        book=book,
        name=item.name,
        type=item.type,
        tier=item.tier,
        description=item.desc,
        entity_id=entity_id,
        aliases=aliases,
        base_state=item.state,
        first_appearance=number,
        source="extraction",
        id_free=True,  # the suggested id was looked up above, a generated one is fresh
    )
    if names is not None:
        names.add((entity.canonical_name, entity.type))
    if ids is not None:
        ids.add(entity.entity_id)
    return entity, True


def _alias_items(aliases: Iterable[str | dict], source: str) -> Iterable[dict]:
    """Each alias as the fields of ``_alias_add`` (a plain name or ``{"alias", "valid_from", …}``)."""
    for alias in aliases:
        fields = {"alias": alias} if isinstance(alias, str) else dict(alias)
        if source == "extraction" and alias_is_generic(str(fields.get("alias", ""))):
            # an agent's 他 / 少年 / 老者 names the entity only weakly, as in the migration of old projects
            fields["generic"] = True
        yield fields


def aliases_add(*, entity: Entity, aliases: Iterable[str | dict], source: str) -> None:
    """``_alias_add`` of each alias, a plain name or the fields of an alias (``{"alias", "valid_from", …}``)."""
    for fields in _alias_items(aliases, source):
        _alias_add(entity=entity, source=source, **fields)


def _aliases_new(*, entity: Entity, aliases: Iterable[str | dict], source: str) -> None:
    """``aliases_add`` for an entity created just now (it has no alias yet): ``_alias_add``'s rules
    applied in memory, then one INSERT (not a SELECT, SAVEPOINT, INSERT and RELEASE per alias). No
    post_save signal: the entity's own save already dropped the book's cached matcher."""
    rows: dict[str, Alias] = {}
    for fields in _alias_items(aliases, source):
        valid_from, valid_to = fields.get("valid_from"), fields.get("valid_to")
        note, generic = fields.get("note", ""), bool(fields.get("generic", False))
        unknown = set(fields) - {"alias", "valid_from", "valid_to", "note", "generic"}
        if unknown:
            raise TypeError(f"unexpected alias fields {sorted(unknown)}")
        alias = _alias_checked(
            entity=entity, alias=fields["alias"], valid_from=valid_from, valid_to=valid_to, note=note, generic=generic
        )
        if alias is None:
            continue
        row = rows.get(alias)
        if row is None:
            rows[alias] = Alias(
                book_id=entity.book_id,
                entity=entity,
                alias=alias,
                valid_from=valid_from,
                valid_to=valid_to,
                note=note,
                source=source,
                generic=generic,
            )
            continue
        if valid_from is not None or valid_to is not None or note:
            row.valid_from, row.valid_to, row.note = valid_from, valid_to, note or row.note
        if generic:
            row.generic = True
    if rows:
        Alias.objects.bulk_create(rows.values())


def appearance_add(*, entity: Entity, number: int, count: int, source: str, aliases: list[str] | None) -> Appearance:
    row, created = Appearance.objects.get_or_create(
        entity=entity,
        chapter=number,
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


def appearances_write(*, number: int, source: str, appearances: list[tuple[Entity, int, list[str]]]) -> None:
    """``appearance_add`` of several entities at one chapter: one query for the rows already there,
    one INSERT for the new ones (was a SELECT, SAVEPOINT, INSERT and RELEASE per entity)."""
    if not appearances:
        return
    existing = {
        row.entity_id: row
        for row in Appearance.objects.filter(
            entity_id__in=[e.pk for e, _, _ in appearances], chapter=number, source=source
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
                    chapter=number,
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


# --- curation: archive and merge -------------------------------------------------------------------


@transaction.atomic
def entities_archive(*, entities: Iterable[Entity], archived: bool, journal: bool = True) -> int:
    """Archive (or unarchive) entities; returns how many changed. Journaled per book (``entities.archive``)."""
    pks = [e.pk for e in entities]
    changing = Entity.objects.filter(pk__in=pks).exclude(archived=archived)
    by_book: dict[int, list[str]] = defaultdict(list)
    for book_id, entity_id in changing.order_by("book_id", "entity_id").values_list("book_id", "entity_id"):
        by_book[book_id].append(entity_id)
    books = {b.pk: b for b in Book.objects.filter(pk__in=by_book)}
    for book in books.values():
        journal_lock(book=book, heal=journal)
    changed = changing.update(archived=archived)
    if journal:
        for book_id, entity_ids in by_book.items():
            journal_append(book=books[book_id], op="entities.archive", entities=entity_ids, archived=archived)
    return changed
