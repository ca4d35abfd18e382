"""The entities and aliases that come from the author's files (设定/名册.yaml, the character cards under
设定/角色/), and the rules that keep agent and curator data safe across a rebuild:

- an id held by an entity of another source (ingested, curated) is reserved: a file entry never takes
  it over;
- a file entity whose entry is gone but which ingested / curated rows point at is kept, archived, and
  comes back (rows and all) when the entry does;
- a curated alias wins over the file alias of the same name on the same entity.

Called by the book-files rebuilder (rebuild, finalize, sync) inside its transaction, with the book's
writer lock held; no transaction of its own. Bulk writes only (``kernel.bulk``), so a roster of
thousands of entries costs a handful of queries.

This app may not import the book-files app above it: the writer names what it reads from the parser's
dataclasses as a ``Protocol`` (``ParsedEntity``, ``ParsedAlias``), and reports a skipped entry as a
``RosterIssue`` the rebuilder turns into its own issue type.
"""

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from django.db import connection, models
from django.utils import timezone

from core.models import Book
from entities.hierarchy import parents_write
from entities.ids import entity_ids_assign
from entities.mentions import matcher_invalidate
from entities.models import Alias, Entity, StateChange
from kernel.bulk import rows_insert, rows_update

ENTITY_FIELDS = ["type", "canonical_name", "tier", "description", "base_state", "is_protagonist", "source_path"]

# Rows whose ``source`` is one of these are re-derived from the folder (file entries, the alias scan of
# chapter text); any other row pointing at an entity was ingested or curated and must outlive its card.
DERIVED_SOURCES = frozenset({"file", "scan", "timeline"})


class ParsedAlias(Protocol):
    alias: str
    valid_from: int | None
    valid_to: int | None
    note: str
    generic: bool


class ParsedChange(Protocol):
    chapter: int
    op: str
    field: str
    value: Any
    note: str


class ParsedEntity(Protocol):
    type: str
    name: str
    path: str
    line: int | None
    explicit_id: str
    tier: str
    description: str
    base_state: dict[str, Any]
    protagonist: bool
    parent: str  # issue 31: entities/hierarchy.py

    @property
    def aliases(self) -> Sequence[ParsedAlias]: ...

    @property
    def changes(self) -> Sequence[ParsedChange]: ...  # issue 27: declared state changes


class ParsedTimelineChange(ParsedChange, Protocol):
    entity: str  # the name, alias or id a timeline row writes
    line: int | None


class RosterIssue(NamedTuple):
    """A file entry that was not written: (code, file, line, message), in the parser's issue order."""

    code: str
    file: str
    line: int | None
    message: str


def entities_with_attached_rows(*, pks: list[int]) -> dict[int, int]:
    """{entity pk: number of ingested / curated rows pointing at it} for the given entities. Walks every
    reverse relation of Entity (so a model added later is covered without a list to keep up to date);
    rows whose ``source`` is derived from the folder do not count."""
    if not pks:
        return {}
    attached: dict[int, int] = defaultdict(int)
    for relation in Entity._meta.related_objects:
        if relation.many_to_many or relation.one_to_one or not relation.field.concrete:
            continue
        model = relation.related_model
        column = relation.field.name
        rows = model.objects.filter(**{f"{column}__in": pks})
        if any(f.name == "source" for f in model._meta.concrete_fields):
            rows = rows.exclude(source__in=DERIVED_SOURCES)
        for pk, count in rows.order_by().values_list(column).annotate(n=models.Count("pk")).values_list(column, "n"):
            attached[pk] += count
    return dict(attached)


def roster_removal_preview(*, book: Book, names: set[str]) -> tuple[list[str], list[str]]:
    """What writing a roster of ``names`` would do to the file-backed entities it no longer lists
    (read-only): (names deleted, names kept archived because ingested / curated rows point at them),
    in entity id order."""
    gone = list(
        Entity.objects.filter(book=book, source="file")
        .exclude(source_path="")
        .exclude(canonical_name__in=names)
        .order_by("entity_id")
        .values_list("pk", "canonical_name")
    )
    attached = entities_with_attached_rows(pks=[pk for pk, _ in gone])
    return [name for pk, name in gone if pk not in attached], [name for pk, name in gone if pk in attached]


def roster_write(*, book: Book, entities: Sequence[ParsedEntity]) -> tuple[int, int, list[RosterIssue]]:
    """Upsert file entities by (book, entity_id), replace their file aliases, delete file entities
    whose entry is gone. Entities and aliases of any other source are never touched: their ids are
    reserved, so a file entry never takes one over. Returns (entities, aliases written, entries skipped).

    A file entity whose entry is gone but which ingested / curated rows point at (state changes,
    relationships, extraction appearances, curated aliases) is kept, archived and marked no longer
    file-backed (``source_path`` empty): moving a card out of the folder and back restores it, rows and
    all, and un-archives it. A curator's own archive of a file-backed entity is left alone."""
    current: dict[str, tuple] = {}
    existing: dict[str, tuple[int, str]] = {}
    orphaned: set[str] = set()
    for eid, pk, source, archived, *values in (
        Entity.objects.filter(book=book).order_by().values_list("entity_id", "pk", "source", "archived", *ENTITY_FIELDS)
    ):
        existing[eid] = (pk, source)
        current[eid] = tuple(values)
        if source == "file" and archived and not values[ENTITY_FIELDS.index("source_path")]:
            orphaned.add(eid)
    reserved = {eid for eid, (_pk, source) in existing.items() if source != "file"}
    issues: list[RosterIssue] = []
    kept: list[ParsedEntity] = []
    for entity in entities:
        if entity.explicit_id and entity.explicit_id in reserved:
            issues.append(
                RosterIssue(
                    "entity_id_taken",
                    entity.path,
                    entity.line,
                    f"实体 id {entity.explicit_id} 已被非文件来源（{existing[entity.explicit_id][1]}）的实体占用，文件条目「{entity.name}」未导入",
                )
            )
            continue
        kept.append(entity)
    ids = entity_ids_assign([(e.name, e.type, e.explicit_id) for e in kept], taken=reserved)
    seen: set[str] = set()
    unique: list[tuple[str, ParsedEntity]] = []
    for entity, entity_id in zip(kept, ids, strict=True):
        if entity_id in seen:  # two explicit ids alike: the first wins
            issues.append(
                RosterIssue("duplicate", entity.path, entity.line, f"实体 id {entity_id} 重复，「{entity.name}」未导入")
            )
            continue
        seen.add(entity_id)
        unique.append((entity_id, entity))

    updates, creates = [], []
    for entity_id, e in unique:
        values = {
            "type": e.type,
            "canonical_name": e.name[:200],
            "tier": e.tier,
            "description": e.description,
            "base_state": e.base_state,
            "is_protagonist": e.protagonist,
            "source_path": e.path,
        }
        if entity_id not in existing:
            creates.append(
                {
                    "book_id": book.pk,
                    "entity_id": entity_id,
                    **values,
                    "first_appearance": None,
                    "last_appearance": None,
                    "archived": False,
                    "source": "file",
                    "parent_id": None,  # set below, once every entry has its row (parents_write)
                }
            )
        elif current[entity_id] != tuple(values[f] for f in ENTITY_FIELDS):
            updates.append({"pk": existing[entity_id][0], **values})  # only the rows whose entry changed
    rows_update(Entity, updates, ENTITY_FIELDS)
    rows_insert(Entity, creates)
    revived = [existing[eid][0] for eid in orphaned & seen]
    if revived:
        Entity.objects.filter(pk__in=revived).update(archived=False)
    stale = [pk for eid, (pk, source) in existing.items() if source == "file" and eid not in seen]
    keep = entities_with_attached_rows(pks=stale)
    if keep:
        Entity.objects.filter(pk__in=list(keep)).update(archived=True, source_path="")
    if len(keep) < len(stale):
        Entity.objects.filter(pk__in=[pk for pk in stale if pk not in keep]).delete()
    pks = dict(Entity.objects.filter(book=book, entity_id__in=seen).order_by().values_list("entity_id", "pk"))
    # One DELETE, not Django's collector (it loads every alias to send post_delete, whose only
    # receiver drops the cached alias automaton: done once below).
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {Alias._meta.db_table} WHERE book_id = %s AND source = %s", [book.pk, "file"])
    curated = set(Alias.objects.filter(book=book).exclude(source="file").order_by().values_list("entity_id", "alias"))
    aliases = []
    for entity_id, e in unique:
        pk = pks[entity_id]
        names: set[str] = set()
        for a in e.aliases:
            if a.alias in names or (pk, a.alias) in curated:
                continue
            names.add(a.alias)
            aliases.append(
                {
                    "book_id": book.pk,
                    "entity_id": pk,
                    "alias": a.alias[:200],
                    "valid_from": a.valid_from,
                    "valid_to": a.valid_to,
                    "note": a.note[:300],
                    "source": "file",
                    "generic": a.generic,
                }
            )
    rows_insert(Alias, aliases)
    declared_changes_write(book=book, written=[(pks[eid], e) for eid, e in unique])
    matcher_invalidate(book_id=book.pk)  # plain-row writes send no signals
    issues += [RosterIssue(*i) for i in parents_write(book=book, written=unique)]  # issue 31: the hierarchy
    return len(unique), len(aliases), issues


def declared_changes_write(*, book: Book, written: Sequence[tuple[int, ParsedEntity]]) -> int:
    """Issue 27: the state changes the entries declare (``changes:`` of a card or roster entry) as
    ``StateChange`` rows of source ``file``, replaced as a whole with the roster (they are re-derived
    from the folder like the entries themselves). Each takes ``seq`` 0, so it replays at the start of
    its chapter's changes, before the chapter's own tags (which number from 1 either way), in the
    entry's order."""
    StateChange.objects.filter(book=book, source=StateChange.Source.FILE).delete()
    now = timezone.now()
    rows = [
        {
            "book_id": book.pk,
            "entity_id": pk,
            "chapter": change.chapter,
            "seq": 0,
            "field": change.field[:100],
            "op": change.op,
            "old": None,
            "new": change.value,
            "reason": change.note or f"{entity.path} 声明",
            "confidence": None,
            "source": StateChange.Source.FILE,
            "created_at": now,
        }
        for pk, entity in written
        for change in getattr(entity, "changes", ())
    ]
    return rows_insert(StateChange, rows)


def timeline_changes_write(
    *, book: Book, changes: Sequence[tuple[str, ParsedTimelineChange]]
) -> tuple[int, list[RosterIssue]]:
    """Issue 27: the state changes the timeline rows declare (``(path, change)``, every timeline
    file's, in file and row order) as ``StateChange`` rows of source ``timeline``, replaced as a whole.
    Called after the roster whenever a timeline file or an entity file changed (a name resolves to
    the entity of a card or roster entry: its canonical name, its id, else one of its file aliases), so
    the rows are those a rebuild into an empty database writes. ``reason`` holds ``path:line`` and the
    row's 事件 — the check cites that line. Returns (rows written, unresolved entries as warnings)."""
    StateChange.objects.filter(book=book, source=StateChange.Source.TIMELINE).delete()
    if not changes:
        return 0, []
    by_name: dict[str, set[int]] = defaultdict(set)
    by_id: dict[str, int] = {}
    for pk, eid, name in (
        Entity.objects.filter(book=book, source="file").order_by().values_list("pk", "entity_id", "canonical_name")
    ):
        by_name[name].add(pk)
        by_id[eid] = pk
    by_alias: dict[str, set[int]] = defaultdict(set)
    for pk, alias in (
        Alias.objects.filter(book=book, source="file", generic=False, entity__source="file")
        .order_by()
        .values_list("entity_id", "alias")
    ):
        by_alias[alias].add(pk)
    now = timezone.now()
    rows: list[dict[str, Any]] = []
    issues: list[RosterIssue] = []
    for path, change in changes:
        name = change.entity
        found = by_name.get(name) or ({by_id[name]} if name in by_id else None) or by_alias.get(name) or set()
        if len(found) != 1:
            what = "不是任何角色卡或名册条目的名字、别名或 id" if not found else "对应多个实体，请写实体的 id"
            issues.append(
                RosterIssue(
                    "invalid_value", path, change.line, f"时间线第 {change.line} 行的状态变化写的「{name}」{what}"
                )
            )
            continue
        rows.append(
            {
                "book_id": book.pk,
                "entity_id": next(iter(found)),
                "chapter": change.chapter,
                "seq": 0,
                "field": change.field[:100],
                "op": change.op,
                "old": None,
                "new": change.value,
                "reason": f"{path}:{change.line} {change.note}".rstrip(),
                "confidence": None,
                "source": StateChange.Source.TIMELINE,
                "created_at": now,
            }
        )
    return rows_insert(StateChange, rows), issues
