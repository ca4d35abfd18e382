"""A curator's edits (the admin's change forms) of the rows ingestion and curation made: entities added
or edited, aliases added, changed or removed, state changes edited or deleted, relationships saved or
deleted. Rows that come from the author's files (an entity or alias of source ``file``, a state change
or relationship event of source ``tag``) are refused, naming the file to edit instead: the next sync
would undo the edit (one owner for every field, docs/book-format.md).

Each service takes the journaling writer's lock (``core.journal.journal_lock``), writes, and journals
its event naming rows by stable keys (entity ids, an alias's text, a state change's content, a
relationship's (from, to, type)), never a database id, so ``bookfiles.rebuilder.journal_replay`` applies it
again after a rebuild. Above ``entities.mentions``: a new or changed name rescans the chapters where it occurs.
"""

import datetime
import json
from typing import Any

from django.db import transaction
from django.db.models import Max

from core.journal import journal_append, journal_lock
from core.models import Book, Chapter
from entities.mentions import mentions_names_after, mentions_names_before
from entities.models import Alias, Entity, Relationship, RelationshipEvent, StateChange
from entities.services.writes import (
    alias_add,
    entity_appearance_refresh,
    entity_create,
    relationship_summary_refresh,
    state_change_check,
    state_changes_renumber,
)
from entities.tags import tag_applications_rename
from kernel.exceptions import InvalidInput, NotFound

ENTITY_EDITABLE = ("canonical_name", "type", "tier", "description", "base_state", "is_protagonist")
EVENT_SOURCES = {s.value for s in RelationshipEvent.Source} - {RelationshipEvent.Source.TAG}


def entity_file_note(entity: Entity) -> str:
    """Where a file entity's values are edited (Chinese, for the admin and the refusals)."""
    path = entity.source_path
    if not path:
        return "来自书籍文件（其条目已从文件中删除）：重新加入文件后由文件更新"
    if path.startswith("设定/角色/"):
        return f"来自 {path} 开头 --- 之间的设定，请在文件中修改"
    return f"来自 {path}，请在文件中修改"


def chapter_file_note(*, book_id: int, number: int, what: str = "实体标签") -> str:
    path = Chapter.objects.filter(book_id=book_id, number=number).values_list("source_path", flat=True).first()
    return f"来自 {path or f'第{number}章的文件'} 中的{what}，请在文件中修改"


def _refuse_file_entity(entity: Entity) -> None:
    if entity.source == "file":
        raise InvalidInput(
            f"实体 {entity.entity_id} {entity_file_note(entity)}", extra={"entity": entity.entity_id, "source": "file"}
        )


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, ensure_ascii=False, default=str) == json.dumps(
        b, sort_keys=True, ensure_ascii=False, default=str
    )


# --- entities ------------------------------------------------------------------------------------


@transaction.atomic
def entity_add(
    *,
    book: Book,
    name: str,
    type: str,
    tier: str = Entity.Tier.DECOR,
    description: str = "",
    base_state: dict | None = None,
    is_protagonist: bool = False,
    entity_id: str | None = None,
    journal: bool = True,
) -> Entity:
    """A curator's new entity (source ``admin``), its id generated unless given. Journaled (``entity.create``)."""
    journal_lock(book=book, heal=journal)
    before = mentions_names_before(book=book)
    name = (name or "").strip()
    if not name:
        raise InvalidInput("实体正名不能为空", extra={"field": "canonical_name"})
    if base_state is not None and not isinstance(base_state, dict):
        raise InvalidInput("初始状态应是 JSON 对象", extra={"field": "base_state"})
    tagged = _tag_entity_to_take_over(book=book, name=name, type=type, entity_id=entity_id, journal=journal)
    if tagged is not None and type in Entity.Type.values and tier in Entity.Tier.values:
        entity = _tagged_entity_take_over(
            entity=tagged,
            entity_id=entity_id,
            canonical_name=name,
            type=type,
            tier=tier,
            description=description,
            base_state=base_state or {},
            is_protagonist=is_protagonist,
        )
        mentions_names_after(book=book, before=before)
        return entity
    entity = entity_create(
        book=book,
        name=name,
        type=type,
        tier=tier,
        description=description,
        entity_id=entity_id,
        base_state=base_state,
        is_protagonist=is_protagonist,
        source="admin",
    )
    mentions_names_after(book=book, before=before)  # the chapters naming it (docs/entities.md, *Mentions*)
    if journal:
        journal_append(
            book=book,
            op="entity.create",
            entity=entity.entity_id,
            name=name,
            type=type,
            tier=tier,
            description=description,
            base_state=base_state or {},
            is_protagonist=is_protagonist,
        )
    return entity


def entity_tagged_refuse(*, book: Book, name: str, type: str) -> None:
    """Refuse a curator's new entity of a name and type a chapter's tag made (the admin form checks it too)."""
    namesake = Entity.objects.filter(book=book, canonical_name=name, type=type, source="tag").first()
    if namesake is not None:
        raise InvalidInput(
            f"实体 {name}（{type}）已由第{namesake.first_appearance}章的实体标签建立（{namesake.entity_id}），请直接修改它",
            extra={"entity": namesake.entity_id, "source": "tag"},
        )


def _tag_entity_to_take_over(
    *, book: Book, name: str, type: str, entity_id: str | None, journal: bool
) -> Entity | None:
    """The tag-made entity a replayed ``entity.create`` becomes (None: create one). Live, a curator's
    entity added before the first chapter that tags it is the entity the tag names (by its id, or by
    its name and type); a rebuild applies the chapters' tags before it replays the journal, so the tag
    has made that entity and the replay hands it over to the curator's id and fields. Live, in the other
    order, a second entity of a tagged name and type is refused (a rebuild would give the tag's)."""
    namesake = Entity.objects.filter(book=book, canonical_name=name, type=type, source="tag").first()
    if journal:
        entity_tagged_refuse(book=book, name=name, type=type)
        return None
    holder = Entity.objects.filter(book=book, entity_id=entity_id).first() if entity_id else None
    if holder is not None:
        return holder if holder.source == "tag" else None
    return namesake if entity_id else None


def _tagged_entity_take_over(*, entity: Entity, entity_id: str, **fields: Any) -> Entity:
    """A tag-made entity becomes the curator's ``entity_id`` (its rows, aliases and tags' record follow)."""
    old = entity.entity_id
    entity.entity_id, entity.source = entity_id, "admin"
    for name, value in fields.items():
        setattr(entity, name, value)
    entity.save(update_fields=["entity_id", "source", *fields])
    if old != entity_id:
        tag_applications_rename(book=entity.book, old=old, new=entity_id)
    return entity


@transaction.atomic
def entity_edit(*, entity: Entity, changes: dict[str, Any], journal: bool = True) -> Entity:
    """Change fields of an entity that no file owns (``ENTITY_EDITABLE``); a new name rescans the
    chapters naming the old or the new one. Journaled (``entity.edit``: the fields that changed)."""
    journal_lock(book=entity.book, heal=journal)
    before = mentions_names_before(book=entity.book)
    entity = Entity.objects.get(pk=entity.pk)
    _refuse_file_entity(entity)
    unknown = sorted(set(changes) - set(ENTITY_EDITABLE))
    if unknown:
        raise InvalidInput(f"实体的这些字段不能修改：{'、'.join(unknown)}", extra={"fields": unknown})
    if "type" in changes and changes["type"] not in Entity.Type.values:
        raise InvalidInput(f"未知的实体类型 '{changes['type']}'，可选 {'/'.join(Entity.Type.values)}")
    if "tier" in changes and changes["tier"] not in Entity.Tier.values:
        raise InvalidInput(f"未知的层级 '{changes['tier']}'，可选 {'/'.join(Entity.Tier.values)}")
    if "canonical_name" in changes and not str(changes["canonical_name"] or "").strip():
        raise InvalidInput("实体正名不能为空", extra={"field": "canonical_name"})
    if "base_state" in changes and not isinstance(changes["base_state"], dict):
        raise InvalidInput("初始状态应是 JSON 对象", extra={"field": "base_state"})
    changed = {k: v for k, v in changes.items() if not _same(getattr(entity, k), v)}
    if not changed:
        return entity
    for name, value in changed.items():
        setattr(entity, name, value.strip() if name == "canonical_name" else value)
    entity.save(update_fields=list(changed))
    if "canonical_name" in changed:
        mentions_names_after(book=entity.book, before=before)
    if journal:
        journal_append(book=entity.book, op="entity.edit", entity=entity.entity_id, changes=changed)
    return entity


# --- aliases -------------------------------------------------------------------------------------


def _alias_of(entity: Entity, text: str) -> Alias:
    row = Alias.objects.filter(entity=entity, alias=text).first()
    if row is None:
        raise NotFound(f"实体 {entity.entity_id} 没有别名 '{text}'", extra={"entity": entity.entity_id, "alias": text})
    return row


def _refuse_file_alias(row: Alias) -> None:
    if row.source == "file":
        raise InvalidInput(
            f"别名 '{row.alias}' {entity_file_note(row.entity)}",
            extra={"entity": row.entity.entity_id, "alias": row.alias},
        )


@transaction.atomic
def alias_save(
    *,
    entity: Entity,
    alias: str,
    valid_from: int | None = None,
    valid_to: int | None = None,
    note: str = "",
    previous: str | None = None,
    journal: bool = True,
) -> Alias:
    """Add an alias to ``entity`` (``previous`` None) or change the one whose text is ``previous``:
    its text, validity window and note (a generic mark goes through ``aliases_generic_set``). Aliases
    from the book's files are refused. Journaled (``alias.save``)."""
    journal_lock(book=entity.book, heal=journal)
    before = mentions_names_before(book=entity.book)
    text = (alias or "").strip()
    if not text:
        raise InvalidInput("别名不能为空", extra={"entity": entity.entity_id})
    if valid_from is not None and valid_to is not None and valid_from > valid_to:
        raise InvalidInput(f"别名 '{text}' 的有效区间无效：from {valid_from} > to {valid_to}", extra={"alias": text})
    if previous is not None:
        row = _alias_of(entity, previous)
        _refuse_file_alias(row)
        if text != previous and Alias.objects.filter(entity=entity, alias=text).exists():
            raise InvalidInput(f"实体 {entity.entity_id} 已有别名 '{text}'", extra={"alias": text})
        row.alias, row.valid_from, row.valid_to, row.note = text, valid_from, valid_to, note
        row.save(update_fields=["alias", "valid_from", "valid_to", "note"])
    else:
        existing = Alias.objects.filter(entity=entity, alias=text).first()
        if existing is not None:
            _refuse_file_alias(existing)
            raise InvalidInput(f"实体 {entity.entity_id} 已有别名 '{text}'", extra={"alias": text})
        if text == entity.canonical_name:
            raise InvalidInput(f"'{text}' 是实体的正名，不必再作别名", extra={"alias": text})
        row = alias_add(entity=entity, alias=text, valid_from=valid_from, valid_to=valid_to, note=note, source="admin")
    mentions_names_after(book=entity.book, before=before)  # a name or its validity window changed
    if journal:
        journal_append(
            book=entity.book,
            op="alias.save",
            entity=entity.entity_id,
            alias=text,
            valid_from=valid_from,
            valid_to=valid_to,
            note=note,
            previous=previous,
        )
    return row


@transaction.atomic
def alias_delete(*, alias: Alias, journal: bool = True) -> None:
    """Remove an alias no file owns, then rescan the chapters that name it. Journaled (``alias.delete``)."""
    journal_lock(book=alias.entity.book, heal=journal)
    _refuse_file_alias(alias)
    before = mentions_names_before(book=alias.entity.book)
    entity, text = alias.entity, alias.alias
    alias.delete()
    mentions_names_after(book=entity.book, before=before)
    if journal:
        journal_append(book=entity.book, op="alias.delete", entity=entity.entity_id, alias=text)


# --- state changes -------------------------------------------------------------------------------


def state_change_key(*, change: StateChange) -> dict[str, Any]:
    """A state change's stable identity in the journal: its entity id, chapter, field, op, new value
    and source (of identical ones, the first in replay order)."""
    return {
        "entity": change.entity.entity_id,
        "chapter": change.chapter,
        "field": change.field,
        "change": change.op,
        "new": change.new,
        "source": change.source,
    }


def state_change_find(*, book: Book, key: dict[str, Any]) -> StateChange:
    """The first state change of ``book`` with this key (``state_change_key``), or NotFound."""
    rows = StateChange.objects.filter(
        book=book,
        entity__entity_id=key["entity"],
        chapter=key["chapter"],
        field=key["field"],
        op=key["change"],
        source=key["source"],
    ).order_by("seq", "pk")
    for row in rows:
        if _same(row.new, key["new"]):
            return row
    raise NotFound(
        f"{key['entity']} 第{key['chapter']}章没有与日志一致的状态变更（{key['field']} {key['change']}）",
        extra={"entity": key["entity"], "chapter": key["chapter"]},
    )


DECLARED_SOURCES = (StateChange.Source.FILE, StateChange.Source.TIMELINE)  # issue 27: re-derived from the folder


def declared_change_note(change: StateChange) -> str | None:
    """Where a declared state change is written (a card's / roster entry's ``changes:``, a timeline
    row's 状态变化), None for any other source."""
    if change.source == StateChange.Source.FILE:
        return f"这条状态变更声明在设定文件里（{change.entity.source_path or '角色卡'} 的 changes），请改文件后同步"
    if change.source == StateChange.Source.TIMELINE:
        where = change.reason.split(" ", 1)[0] or "时间线文件"
        return f"这条状态变更声明在时间线里（{where} 的「状态变化」），请改文件后同步"
    return None


def _refuse_tag_change(change: StateChange) -> None:
    note = declared_change_note(change)  # issue 27: the folder's declaration is the truth
    if note is not None:
        raise InvalidInput(note, extra={"entity": change.entity.entity_id, "chapter": change.chapter})
    if change.source == StateChange.Source.TAG:
        raise InvalidInput(
            f"这条状态变更{chapter_file_note(book_id=change.book_id, number=change.chapter)}",
            extra={"entity": change.entity.entity_id, "chapter": change.chapter},
        )


@transaction.atomic
def state_change_edit(
    *,
    change: StateChange,
    number: int,
    field: str,
    op: str,
    new: Any = None,
    old: Any = None,
    reason: str = "",
    journal: bool = True,
) -> StateChange:
    """Change an existing state change (validated like a new one; moved to another chapter, it comes
    after that chapter's others). Tag-made changes are the chapter file's. Journaled (``state_change.edit``)."""
    journal_lock(book=change.entity.book, heal=journal)
    change = StateChange.objects.select_related("entity").get(pk=change.pk)
    _refuse_tag_change(change)
    key = state_change_key(change=change)
    state_change_check(entity=change.entity, number=number, field=field, op=op, new=new)
    if number != change.chapter:
        top = StateChange.objects.filter(entity=change.entity, chapter=number).aggregate(m=Max("seq"))["m"]
        change.seq = (top or 0) + 1
    change.chapter, change.field, change.op, change.new, change.old, change.reason = (
        number,
        field,
        op,
        new,
        old,
        reason,
    )
    change.save(update_fields=["chapter", "seq", "field", "op", "new", "old", "reason"])
    entity_appearance_refresh(entity_pks=[change.entity_id])
    if journal:
        journal_append(
            book=change.entity.book,
            op="state_change.edit",
            key=key,
            chapter=number,
            field=field,
            change=op,
            new=new,
            old=old,
            reason=reason,
        )
    return change


@transaction.atomic
def state_change_delete(*, change: StateChange, journal: bool = True) -> None:
    """Delete a state change no chapter file owns. Journaled (``state_change.delete``)."""
    journal_lock(book=change.entity.book, heal=journal)
    _refuse_tag_change(change)
    key = state_change_key(change=change)
    entity = change.entity
    change.delete()
    entity_appearance_refresh(entity_pks=[entity.pk])
    if journal:
        journal_append(book=entity.book, op="state_change.delete", key=key)


def state_changes_order_restore(
    *, book: Book, number: int, ingested_at: datetime.datetime, moved_in: dict[int, bool] | None = None
) -> int:
    """After a re-ingestion of ``number`` whose previous ingestion was written at ``ingested_at``, put
    each entity's changes at that chapter back in the order a replay of the journal gives them: a
    chapter tag's first, then those written before that ingestion, the ingested ones, those written
    after it (the replace path alone appends the re-ingested rows last). ``moved_in``: another
    chapter's ingested changes a curator moved here (pk → moved after that ingestion), which count as
    written when they were moved. Returns how many moved."""
    moved_in = moved_in or {}

    def rank(row: StateChange) -> int:
        if row.source == StateChange.Source.TAG:
            return 0
        if row.pk in moved_in:
            return 3 if moved_in[row.pk] else 1
        if row.source == StateChange.Source.EXTRACTION:
            return 2
        return 1 if row.created_at <= ingested_at else 3

    # the declared rows are re-derived at seq 0, always first
    rows_now = StateChange.objects.filter(book=book, chapter=number).exclude(source__in=DECLARED_SOURCES)
    return state_changes_renumber(rows=rows_now, rank=rank)


# --- relationships -------------------------------------------------------------------------------


def relationship_key(*, relationship: Relationship) -> list[str]:
    """A relationship's stable identity: [from entity id, to entity id, type]."""
    return [relationship.from_entity.entity_id, relationship.to_entity.entity_id, relationship.type]


def relationship_find(*, book: Book, key: list[str]) -> Relationship:
    from_id, to_id, type_ = key
    rel = Relationship.objects.filter(
        book=book, from_entity__entity_id=from_id, to_entity__entity_id=to_id, type=type_
    ).first()
    if rel is None:
        raise NotFound(f"没有关系 {from_id} —{type_}→ {to_id}", extra={"relationship": key})
    return rel


def _refuse_tag_relationship(rel: Relationship) -> None:
    tagged = list(rel.events.filter(source=RelationshipEvent.Source.TAG).values_list("chapter", flat=True)[:1])
    if tagged:
        chapter = tagged[0]
        raise InvalidInput(
            f"关系 {' / '.join(relationship_key(relationship=rel))} 含"
            f"{chapter_file_note(book_id=rel.book_id, number=chapter or 0, what='实体标签事件')}",
            extra={"relationship": relationship_key(relationship=rel)},
        )


def _events_clean(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    clean = []
    for i, event in enumerate(events):
        chapter = event.get("chapter")
        if chapter is not None and (not isinstance(chapter, int) or isinstance(chapter, bool) or chapter < 0):
            raise InvalidInput(f"events[{i}].chapter: 章节号无效：{chapter!r}", extra={"field": f"events[{i}].chapter"})
        source = event.get("source") or RelationshipEvent.Source.CURATION
        if source not in EVENT_SOURCES:
            raise InvalidInput(f"events[{i}].source: 不能是 '{source}'", extra={"field": f"events[{i}].source"})
        clean.append({"chapter": chapter, "description": str(event.get("description") or ""), "source": source})
    if not clean:
        raise InvalidInput("关系至少要有一条事件（章节与描述）", extra={"field": "events"})
    return clean


@transaction.atomic
def relationship_save(
    *,
    book: Book,
    key: list[str] | None,
    from_entity: Entity,
    to_entity: Entity,
    type: str,
    events: list[dict[str, Any]],
    journal: bool = True,
) -> Relationship:
    """Create a relationship (``key`` None) or change the one named by ``key``: its ends, its type and
    its events (``events``: all of them, ``{"chapter", "description", "source"}``). One that holds a
    chapter tag's event is the chapter file's. Journaled (``relationship.save``)."""
    journal_lock(book=book, heal=journal)
    type = (type or "").strip()
    if not type:
        raise InvalidInput("关系类型不能为空", extra={"field": "type"})
    if from_entity.book_id != book.pk or to_entity.book_id != book.pk:
        raise InvalidInput("关系两端必须属于同一本书", extra={"from": from_entity.entity_id, "to": to_entity.entity_id})
    events = _events_clean(events)
    triple = {"from_entity": from_entity, "to_entity": to_entity, "type": type}
    clash = Relationship.objects.filter(book=book, **triple)
    if key is not None:
        rel = relationship_find(book=book, key=key)
        _refuse_tag_relationship(rel)
        clash = clash.exclude(pk=rel.pk)
    if clash.exists():
        raise InvalidInput(
            f"关系 {from_entity.entity_id} —{type}→ {to_entity.entity_id} 已存在，请修改那一条",
            extra={"relationship": [from_entity.entity_id, to_entity.entity_id, type]},
        )
    if key is None:
        rel = Relationship.objects.create(book=book, **triple)
    else:
        rel.from_entity, rel.to_entity, rel.type = from_entity, to_entity, type
        rel.save(update_fields=["from_entity", "to_entity", "type"])
        rel.events.all().delete()
    RelationshipEvent.objects.bulk_create([RelationshipEvent(relationship=rel, **event) for event in events])
    relationship_summary_refresh(relationship_pks=[rel.pk])
    rel.refresh_from_db()
    if journal:
        journal_append(
            book=book,
            op="relationship.save",
            key=key,
            **{"from": from_entity.entity_id, "to": to_entity.entity_id},
            type=type,
            events=events,
        )
    return rel


@transaction.atomic
def relationship_delete(*, relationship: Relationship, journal: bool = True) -> None:
    """Delete a relationship no chapter tag made. Journaled (``relationship.delete``)."""
    book = relationship.book
    journal_lock(book=book, heal=journal)
    _refuse_tag_relationship(relationship)
    key = relationship_key(relationship=relationship)
    relationship.delete()
    if journal:
        journal_append(book=book, op="relationship.delete", key=key)
