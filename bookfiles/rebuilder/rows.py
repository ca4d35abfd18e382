"""Parsed dataclasses → model rows, and the per-table writers shared by rebuild, finalize and sync.

Every writer works in bulk (plain-row inserts of kernel.bulk or bulk_create in batches, one delete per
table); none issues a query per row.
"""

from collections import defaultdict
from collections.abc import Iterable

from django.db import connection, models
from django.db.models import Q

from bookfiles.parser import (
    ChapterData,
    DocumentData,
    EntityData,
    Issue,
    SecretData,
    SourceInfo,
    ThreadData,
    TimelineRowData,
    VolumeData,
)
from core.fingerprint import fingerprint_compute
from core.models import Book, Chapter, Document, Fingerprint, Section, SourceFile, TimelineRow, Volume
from entities.ids import entity_ids_assign
from entities.mentions import matcher_invalidate
from entities.models import Alias, Entity
from kernel.bulk import rows_insert, rows_update
from threads.models import Secret, Thread, ThreadHistoryEntry

BATCH = 500


def chapters_create(
    *,
    book: Book,
    chapters: list[ChapterData],
    fingerprints: dict[tuple[int, str], dict] | None = None,
    baseline: tuple[int, int] | None = None,
) -> tuple[int, int]:
    """Insert chapters and their fingerprints (one row per chapter, start = end = number, flagged
    when inside ``baseline``, default the book's style_baseline). ``fingerprints`` maps (number,
    content hash) to features already computed for that exact file."""
    known = fingerprints or {}
    if baseline is None and book.style_baseline_start is not None and book.style_baseline_end is not None:
        baseline = (book.style_baseline_start, book.style_baseline_end)
    low, high = baseline or (1, 0)
    rows_insert(
        Chapter,
        [
            {
                "book_id": book.pk,
                "number": c.number,
                "volume": c.volume,
                "title": c.title[:300],
                "perspective": c.perspective[:100],
                "story_time": c.story_time[:200],
                "chapter_position": c.chapter_position,
                "hook_type": c.hook_type[:50],
                "mood_position": c.mood_position,
                "summary": c.summary,
                "key_chapter": c.key_chapter,
                "opens": c.opens,
                "advances": c.advances,
                "closes": c.closes,
                "front_matter": c.front_matter,
                "body": c.body,
                "entity_tags": c.entity_tags,
                "word_count": c.word_count,
                "source_path": c.path,
                "content_hash": c.sha256,
            }
            for c in chapters
        ],
    )
    rows_insert(
        Fingerprint,
        [
            {
                "book_id": book.pk,
                "start_chapter": c.number,
                "end_chapter": c.number,
                "features": known.get((c.number, c.sha256)) or fingerprint_compute(c.body),
                "is_baseline": low <= c.number <= high,
            }
            for c in chapters
        ],
    )
    return len(chapters), sum(c.word_count for c in chapters)


def volumes_merge(
    config_volumes: list[VolumeData], chapters: Iterable[tuple[int | None, int | None, str]]
) -> list[VolumeData]:
    """book.yaml volumes plus any volume a chapter names (front matter or folder) that book.yaml
    lacks; such a volume takes its name from the volume folder. ``chapters``: (number, volume,
    folder name) in chapter order."""
    volumes = {v.number: VolumeData(v.number, v.name, v.start_chapter, v.end_chapter) for v in config_volumes}
    extra_names: dict[int, str] = {}
    for _number, volume, folder_name in chapters:
        if volume is None or volume in volumes:
            continue
        if volume not in extra_names or (not extra_names[volume] and folder_name):
            extra_names[volume] = folder_name
    for number, name in extra_names.items():
        volumes[number] = VolumeData(number=number, name=name)
    return [volumes[n] for n in sorted(volumes)]


def volumes_replace(*, book: Book, volumes: list[VolumeData]) -> int:
    Volume.objects.filter(book=book).delete()
    Volume.objects.bulk_create(
        [
            Volume(
                book=book, number=v.number, name=v.name[:200], start_chapter=v.start_chapter, end_chapter=v.end_chapter
            )
            for v in volumes
        ]
    )
    return len(volumes)


def threads_create(*, book: Book, threads: list[ThreadData]) -> int:
    rows = Thread.objects.bulk_create(
        [
            Thread(
                book=book,
                thread_id=t.thread_id,
                type=t.type,
                title=t.title[:200],
                strength=t.strength,
                status=t.status,
                opened_chapter=t.opened,
                planned_end=t.planned_end,
                planned_end_volume=t.planned_end_volume,
                closed_chapter=t.closed,
                description=t.description,
                closing_plan=t.closing_plan,
                front_matter=t.front_matter,
                source_path=t.path,
            )
            for t in threads
        ],
        batch_size=BATCH,
    )
    pks = _pks(rows, Thread, book, "thread_id", [t.thread_id for t in threads])
    rows_insert(
        ThreadHistoryEntry,
        [
            {"thread_id": pks[t.thread_id], "order": h.order, "chapter": h.chapter, "text": h.text}
            for t in threads
            for h in t.history
        ],
    )
    return len(threads)


def _pks(rows: list, model: type, book: Book, key: str, keys: list) -> dict:
    """Primary keys of freshly bulk-created rows (returned by PostgreSQL and SQLite ≥ 3.35; queried
    back otherwise)."""
    if all(r.pk is not None for r in rows):
        return {getattr(r, key): r.pk for r in rows}
    return dict(model.objects.filter(book=book, **{f"{key}__in": keys}).order_by().values_list(key, "pk"))


def secrets_create(*, book: Book, secrets: list[SecretData]) -> int:
    Secret.objects.bulk_create(
        [
            Secret(
                book=book,
                secret_id=s.secret_id,
                title=s.title[:200],
                known_to=s.known_to,
                reader_knows=s.reader_knows,
                reader_told_chapter=s.reader_told,
                registered_chapter=s.registered,
                keywords=s.keywords,
                content=s.content,
                front_matter=s.front_matter,
                source_path=s.path,
            )
            for s in secrets
        ],
        batch_size=BATCH,
    )
    return len(secrets)


def documents_create(*, book: Book, documents: list[DocumentData]) -> tuple[int, int]:
    rows = Document.objects.bulk_create(
        [
            Document(
                book=book,
                kind=d.kind,
                key=d.key[:200],
                title=d.title[:300],
                front_matter=d.front_matter,
                body=d.body,
                source_path=d.path,
            )
            for d in documents
        ],
        batch_size=BATCH,
    )
    if all(r.pk is not None for r in rows):
        pks = {(r.kind, r.key): r.pk for r in rows}
    else:
        pks = {
            (k, key): pk
            for k, key, pk in Document.objects.filter(book=book).order_by().values_list("kind", "key", "pk")
        }
    sections = [
        {
            "document_id": pks[(d.kind, d.key[:200])],
            "order": s.order,
            "heading": s.heading[:300],
            "level": s.level,
            "body": s.body,
        }
        for d in documents
        for s in d.sections
    ]
    return len(documents), rows_insert(Section, sections)


def timeline_create(*, book: Book, rows: list[TimelineRowData]) -> int:
    return rows_insert(
        TimelineRow,
        [
            {
                "book_id": book.pk,
                "volume": r.volume,
                "order": r.order,
                "chapter": r.chapter,
                "story_time": r.story_time[:200],
                "event": r.event,
                "present": r.present,
                "source_path": r.path,
            }
            for r in rows
        ],
    )


def source_files_create(*, book: Book, files: list[SourceInfo]) -> int:
    return rows_insert(
        SourceFile,
        [
            {
                "book_id": book.pk,
                "path": f.path,
                "kind": f.kind,
                "content_hash": f.sha256,
                "size": f.size,
                "mtime_ns": f.mtime_ns,
            }
            for f in files
        ],
    )


ENTITY_FIELDS = ["type", "canonical_name", "tier", "description", "base_state", "is_protagonist", "source_path"]


# Rows whose ``source`` is one of these are re-derived from the folder (file entries, the alias scan of
# chapter text); any other row pointing at an entity was ingested or curated and must outlive its card.
DERIVED_SOURCES = frozenset({"file", "scan"})


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
        rows_ = model.objects.filter(**{f"{column}__in": pks})
        if any(f.name == "source" for f in model._meta.concrete_fields):
            rows_ = rows_.exclude(source__in=DERIVED_SOURCES)
        for pk, count in rows_.order_by().values_list(column).annotate(n=models.Count("pk")).values_list(column, "n"):
            attached[pk] += count
    return dict(attached)


def entities_write(*, book: Book, entities: list[EntityData]) -> tuple[int, int, list[Issue]]:
    """Upsert file entities by (book, entity_id), replace their file aliases, delete file entities
    whose entry is gone. Entities and aliases of any other source are never touched: their ids are
    reserved, so a file entry never takes one over.

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
    issues: list[Issue] = []
    kept: list[EntityData] = []
    for entity in entities:
        if entity.explicit_id and entity.explicit_id in reserved:
            issues.append(
                Issue(
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
    unique: list[EntityData] = []
    for entity, entity_id in zip(kept, ids, strict=True):
        if entity_id in seen:  # two explicit ids alike: the first wins
            issues.append(
                Issue("duplicate", entity.path, entity.line, f"实体 id {entity_id} 重复，「{entity.name}」未导入")
            )
            continue
        seen.add(entity_id)
        entity.entity_id = entity_id
        unique.append(entity)

    def row(e: EntityData) -> dict:
        return {
            "type": e.type,
            "canonical_name": e.name[:200],
            "tier": e.tier,
            "description": e.description,
            "base_state": e.base_state,
            "is_protagonist": e.protagonist,
            "source_path": e.path,
        }

    updates, creates = [], []
    for e in unique:
        values = row(e)
        if e.entity_id not in existing:
            creates.append(
                {
                    "book_id": book.pk,
                    "entity_id": e.entity_id,
                    **values,
                    "first_appearance": None,
                    "last_appearance": None,
                    "archived": False,
                    "source": "file",
                }
            )
        elif current[e.entity_id] != tuple(values[f] for f in ENTITY_FIELDS):
            updates.append({"pk": existing[e.entity_id][0], **values})  # only the rows whose entry changed
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
    for e in unique:
        pk = pks[e.entity_id]
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
    matcher_invalidate(book_id=book.pk)  # plain-row writes send no signals
    return len(unique), len(aliases), issues


def by_paths(paths: Iterable[str]) -> Q:
    return Q(source_path__in=list(paths))


def group_by_kind(items: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for path, kind in items:
        out[kind].append(path)
    return out
