"""Canonical dump of everything the rebuilder derives from the folder — the author's files and the
journal of agent and curator writes (``core/journal.py``, under ``"written"``): no database ids, no
timestamps, every list sorted, so two rebuilds of the same folder give byte-identical text, and a
book rebuilt into an empty database dumps exactly as it did before.

It stays in the book-files app and reads every app's models (a read downward, which the layers allow)
rather than asking each app for its part: it is the rebuilder's own oracle — one format, one set of
sorting rules, the exact set of columns the rebuilder derives from the files — and spread over four apps
it would be four places to keep byte-identical instead of one."""

import json
from typing import Any

from core.models import Book, Chapter, Document, Fingerprint, Section, SourceFile, TimelineRow, Volume
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
from memory.models import Fact
from storysystem.models import StorySetting
from threads.models import Secret, Thread, ThreadHistoryEntry


def _rows(queryset, fields: list[str], *, key: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    # string keys are sorted in Python: PostgreSQL's collation would order Chinese text differently
    rows = [dict(zip(fields, values, strict=True)) for values in queryset.values_list(*fields)]
    if key:
        rows.sort(key=lambda row: tuple(row[k] for k in key))
    return rows


def _json_key(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _parent_key(entities: list[dict[str, Any]]) -> None:
    # issue 31: an entity's parent (its id) only where it has one, so a book without a hierarchy dumps as before
    for entity in entities:
        parent = entity.pop("parent__entity_id")
        if parent is not None:
            entity["parent"] = parent


def _written(*, book: Book) -> dict[str, Any]:
    """The rows the journal brings back (what ingestion and curation wrote), keyed by stable ids."""
    entities = _rows(
        Entity.objects.filter(book=book).exclude(source="file"),
        ["entity_id", "type", "canonical_name", "tier", "description", "base_state", "is_protagonist", "source"]
        + ["parent__entity_id"],
        key=("entity_id",),
    )
    _parent_key(entities)
    aliases = _rows(
        Alias.objects.filter(book=book).exclude(source="file"),
        ["entity__entity_id", "alias", "valid_from", "valid_to", "note", "generic", "source"],
        key=("entity__entity_id", "alias"),
    )
    state_changes = _rows(
        StateChange.objects.filter(book=book),
        ["entity__entity_id", "chapter", "seq", "field", "op", "old", "new", "reason", "confidence", "source"],
        key=("entity__entity_id", "chapter", "seq"),
    )
    events: dict[tuple[str, str, str], list] = {}
    for from_id, to_id, type_, chapter, description, source in (
        RelationshipEvent.objects.filter(relationship__book=book)
        .order_by("relationship_id", "chapter", "id")
        .values_list(
            "relationship__from_entity__entity_id",
            "relationship__to_entity__entity_id",
            "relationship__type",
            "chapter",
            "description",
            "source",
        )
    ):
        events.setdefault((from_id, to_id, type_), []).append(
            {"chapter": chapter, "description": description, "source": source}
        )
    relationships = _rows(
        Relationship.objects.filter(book=book),
        ["from_entity__entity_id", "to_entity__entity_id", "type", "description", "chapter", "last_chapter"],
        key=("from_entity__entity_id", "to_entity__entity_id", "type"),
    )
    for rel in relationships:
        rel["events"] = events.get((rel["from_entity__entity_id"], rel["to_entity__entity_id"], rel["type"]), [])
    pending = _rows(
        PendingItem.objects.filter(book=book),
        ["chapter", "kind", "payload", "confidence", "status", "resolution", "note", "source"],
    )
    for row in pending:  # a confirmation's answer names the item by its database id: not a stable value
        row["resolution"] = {k: v for k, v in (row["resolution"] or {}).items() if k != "pk"}
    pending.sort(
        key=lambda r: (r["chapter"] or 0, r["kind"], _json_key(r["payload"]), r["status"], _json_key(r["resolution"]))
    )
    # Facts a person or an agent wrote; the derived ones (and every fact's status, which the resolver
    # derives against them) are the memory hook's cache, recomputed after a rebuild from the chapters
    # and extractions, and depend on the order the hooks ran in.
    facts = _rows(
        Fact.objects.filter(book=book).exclude(origin=Fact.Origin.DERIVED),
        ["key", "category", "subject", "field", "value", "source_chapter", "evidence", "confidence",
         "origin", "entity_ref", "revises__key", "closed_chapter"],
        key=("key",),
    )  # fmt: skip
    decided = set(
        Fact.objects.filter(book=book, decided_at__isnull=False)
        .exclude(origin=Fact.Origin.DERIVED)
        .values_list("key", flat=True)
    )
    for fact in facts:
        fact["decided"] = fact["key"] in decided
    return {
        "entities": entities,
        "archived": sorted(Entity.objects.filter(book=book, archived=True).values_list("entity_id", flat=True)),
        "aliases": aliases,
        "appearances": _rows(
            Appearance.objects.filter(book=book),
            ["entity__entity_id", "chapter", "source", "count", "first_offset", "aliases"],
            key=("entity__entity_id", "chapter", "source"),
        ),
        "extractions": _rows(
            Extraction.objects.filter(book=book).order_by("chapter"),
            ["chapter", "payload", "warnings", "scenes", "chapter_meta", "uncertain", "summary", "source"],
        ),
        "state_changes": state_changes,
        "relationships": relationships,
        "pending": pending,
        "facts": facts,
        # a persisted Story System setting (its data holds the build's own timestamp: replayed as written)
        "story_settings": sorted(
            _rows(
                StorySetting.objects.filter(book=book),
                ["chapter", "query", "explicit_genre", "overrides", "added_anti_patterns", "data"],
            ),
            key=lambda row: -1 if row["chapter"] is None else row["chapter"],
        ),
    }


def book_dump(*, book: Book) -> str:
    """Deterministic JSON of the book's rows: the file-derived ones (entities and aliases: source =
    file) and, under ``"written"``, those the journal replays."""
    chapter_fields = [
        "number", "volume", "title", "perspective", "story_time", "chapter_position", "hook_type", "mood_position",
        "summary", "key_chapter", "opens", "advances", "closes", "front_matter", "body", "entity_tags", "word_count",
        "source_path", "content_hash",
    ]  # fmt: skip
    history = {}
    for thread_id, order, chapter, text in (
        ThreadHistoryEntry.objects.filter(thread__book=book)
        .order_by("thread__thread_id", "order")
        .values_list("thread__thread_id", "order", "chapter", "text")
    ):
        history.setdefault(thread_id, []).append({"order": order, "chapter": chapter, "text": text})
    threads = _rows(
        Thread.objects.filter(book=book).order_by("thread_id"),
        ["thread_id", "type", "title", "strength", "status", "opened_chapter", "planned_end", "planned_end_volume",
         "closed_chapter", "description", "closing_plan", "front_matter", "source_path"],
        key=("thread_id",),
    )  # fmt: skip
    for thread in threads:
        thread["history"] = history.get(thread["thread_id"], [])
    sections: dict[tuple[str, str], list] = {}
    for kind, doc_key, order, heading, level, body in (
        Section.objects.filter(document__book=book)
        .order_by("document__kind", "document__key", "order")
        .values_list("document__kind", "document__key", "order", "heading", "level", "body")
    ):
        sections.setdefault((kind, doc_key), []).append(
            {"order": order, "heading": heading, "level": level, "body": body}
        )
    documents = _rows(
        Document.objects.filter(book=book).order_by("kind", "key"),
        ["kind", "key", "title", "front_matter", "body", "source_path"],
        key=("kind", "key"),
    )
    for document in documents:
        document["sections"] = sections.get((document["kind"], document["key"]), [])
    aliases: dict[str, list] = {}
    for entity_id, alias, valid_from, valid_to, note in (
        Alias.objects.filter(book=book, source="file")
        .order_by("entity__entity_id", "alias")
        .values_list("entity__entity_id", "alias", "valid_from", "valid_to", "note")
    ):
        aliases.setdefault(entity_id, []).append(
            {"alias": alias, "valid_from": valid_from, "valid_to": valid_to, "note": note}
        )
    entities = _rows(
        Entity.objects.filter(book=book, source="file").order_by("entity_id"),
        ["entity_id", "type", "canonical_name", "tier", "description", "base_state", "is_protagonist", "source_path"]
        + ["parent__entity_id"],
        key=("entity_id",),
    )
    _parent_key(entities)
    for entity in entities:
        entity["aliases"] = sorted(aliases.get(entity["entity_id"], []), key=lambda a: a["alias"])
    data = {
        "book": {
            "slug": book.slug,
            "title": book.title,
            "genre": book.genre,
            "config": book.config,
            "thresholds": book.thresholds,
            "style_baseline": [book.style_baseline_start, book.style_baseline_end],
        },
        "volumes": _rows(
            Volume.objects.filter(book=book).order_by("number"), ["number", "name", "start_chapter", "end_chapter"]
        ),
        "chapters": _rows(Chapter.objects.filter(book=book).order_by("number"), chapter_fields),
        "fingerprints": _rows(
            Fingerprint.objects.filter(book=book).order_by("start_chapter", "end_chapter"),
            ["start_chapter", "end_chapter", "features", "is_baseline"],
        ),
        "threads": threads,
        "secrets": _rows(
            Secret.objects.filter(book=book).order_by("secret_id"),
            [
                "secret_id",
                "title",
                "known_to",
                "reader_knows",
                "reader_told_chapter",
                "registered_chapter",
                "keywords",
                "content",
                "front_matter",
                "source_path",
            ],
            key=("secret_id",),
        ),  # fmt: skip
        "documents": documents,
        "timeline": _rows(
            TimelineRow.objects.filter(book=book).order_by("volume", "order"),
            ["volume", "order", "chapter", "story_time", "event", "present", "source_path"],
        ),
        "entities": entities,
        "source_files": _rows(
            SourceFile.objects.filter(book=book).order_by("path"),
            ["path", "kind", "content_hash", "size"],
            key=("path",),
        ),
        "written": _written(book=book),
    }
    return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1) + "\n"
