"""Replay of the book folder's journal (``core.journal``): every event not yet applied to the
database, in seq order, through the same service that wrote it (with ``journal=False``, so a replay
never journals again), then marked applied (``JournalApplied``) in the same transaction.

Called by the rebuild (after the file-derived rows and their indexers, in the rebuild's transaction)
and by sync (which so heals an event whose writer crashed between the file and the commit).

A log or payload that is not valid (bad JSON, a missing or mistyped field, an unknown op) stops the
rebuild with an error naming the file and line, like a broken author's file. An event that is valid
but no longer applies (the author deleted the chapter it ingested, an entity it names is gone) is
skipped with a warning naming its line, in its own savepoint, and stays unapplied: the folder keeps
it, and a later sync tries it again.

An extraction file an author edited by hand after it was applied (its sha256 differs from the one
recorded with ``JournalApplied``) is applied again, by rebuild over a database and by sync, through
the re-ingestion (replace) path; a file that is not valid JSON or that the ingestion refuses stops the
sync with an error naming it (nothing changes). A later decision on an item the edited file no longer
holds keeps its result and is reported as a warning (a rebuild into an empty database skips it).

Writers also call ``journal_heal_apply`` (through ``core.journal.journal_heal``) before they write:
the events a crashed writer left after the last applied one are applied first, so a retried write
never lands before the event it retried.
"""

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import transaction

from core.journal import (
    LOG_PATH,
    journal_applied_mark_many,
    journal_applied_restamp,
    journal_applied_seqs,
    journal_applied_stamps,
    journal_attachment_load,
    journal_attachment_path,
    journal_attachment_stat,
    journal_events,
    journal_follow,
    journal_line_name,
)
from core.models import Book
from entities.discovery.services import discovery_merge, discovery_queue_replay, discovery_split
from entities.legacy_state import legacy_state_import
from entities.mentions import mentions_follow
from entities.models import Alias, Entity, Extraction
from entities.selectors import entity_get
from entities.services.curation import (
    alias_delete,
    alias_save,
    entity_add,
    entity_edit,
    relationship_delete,
    relationship_find,
    relationship_save,
    state_change_delete,
    state_change_edit,
    state_change_find,
    state_changes_order_restore,
)
from entities.services.ingest import IngestKnown, extraction_ingest, ingest_known_load
from entities.services.marks import aliases_generic_set, entity_merge
from entities.services.pending import pending_item_confirm, pending_item_find, pending_item_reject
from entities.services.writes import entities_archive, state_change_curate
from kernel.exceptions import DomainError, InvalidInput, NotFound
from kernel.indexing import after_chapter_hooks_schedule
from memory.selectors import fact_get
from memory.services import fact_close, fact_decide, fact_observe, fact_revise, scratchpad_import
from storysystem.services import story_setting_save

logger = logging.getLogger(__name__)

Replayer = Callable[[Book, Any, dict[str, Any]], None]  # (book, the event's attachment or None, event)


def _entity(book: Book, ref: str | None) -> Entity | None:
    return None if ref is None else entity_get(book=book, ref=ref)


def _extraction_ingest(book: Book, payload: Any, e: dict, known: IngestKnown | None = None) -> None:
    extraction_ingest(book=book, chapter=e["chapter"], payload=payload, journal=False, hooks=False, known=known)


def _pending(book: Book, e: dict):
    return pending_item_find(book=book, chapter=e["chapter"], kind=e["kind"], payload=e["payload"])


def _pending_confirm(book: Book, data: Any, e: dict) -> None:
    pending_item_confirm(item=_pending(book, e), entity=_entity(book, e.get("entity")), journal=False)


def _pending_reject(book: Book, data: Any, e: dict) -> None:
    pending_item_reject(item=_pending(book, e), note=e.get("note", ""), journal=False)


def _entity_merge(book: Book, data: Any, e: dict) -> None:
    entity_merge(source=_entity(book, e["source"]), target=_entity(book, e["target"]), journal=False)


def _entities_archive(book: Book, data: Any, e: dict) -> None:
    entities_archive(
        entities=Entity.objects.filter(book=book, entity_id__in=e["entities"]), archived=e["archived"], journal=False
    )


def _aliases_generic(book: Book, data: Any, e: dict) -> None:
    pks = [
        pk
        for entity_id, alias in e["aliases"]
        for pk in Alias.objects.filter(book=book, entity__entity_id=entity_id, alias=alias).values_list("pk", flat=True)
    ]
    aliases_generic_set(aliases=Alias.objects.filter(pk__in=pks), generic=e["generic"], journal=False)


def _state_change(book: Book, data: Any, e: dict) -> None:
    state_change_curate(
        entity=_entity(book, e["entity"]),
        chapter=e["chapter"],
        field=e["field"],
        op=e["change"],
        new=e.get("new"),
        old=e.get("old"),
        reason=e.get("reason", ""),
        journal=False,
    )


def _fact_observe(book: Book, data: Any, e: dict) -> None:
    fact_observe(
        book=book,
        category=e["category"],
        subject=e["subject"],
        field=e["field"],
        value=e["value"],
        chapter=e["chapter"],
        confidence=e.get("confidence", 1.0),
        evidence=e.get("evidence") or [],
        origin=e.get("origin", "manual"),
        entity_ref=e.get("entity_ref", ""),
        revises=fact_get(book=book, key=e["revises"]) if e.get("revises") else None,
        key=e.get("key"),
        journal=False,
    )


def _fact_revise(book: Book, data: Any, e: dict) -> None:
    fact_revise(
        fact=fact_get(book=book, key=e["fact"]),
        value=e["value"],
        chapter=e["chapter"],
        reason=e.get("reason", ""),
        journal=False,
    )


def _fact_close(book: Book, data: Any, e: dict) -> None:
    fact_close(fact=fact_get(book=book, key=e["fact"]), chapter=e["chapter"], reason=e.get("reason", ""), journal=False)


def _fact_decide(book: Book, data: Any, e: dict) -> None:
    fact_decide(fact=fact_get(book=book, key=e["fact"]), note=e.get("note", ""), journal=False)


def _entity_create(book: Book, data: Any, e: dict) -> None:
    entity_add(
        book=book,
        name=e["name"],
        type=e["type"],
        tier=e["tier"],
        description=e.get("description", ""),
        base_state=e.get("base_state") or {},
        is_protagonist=bool(e.get("is_protagonist")),
        entity_id=e["entity"],
        journal=False,
    )


def _entity_edit(book: Book, data: Any, e: dict) -> None:
    entity_edit(entity=_entity(book, e["entity"]), changes=e["changes"], journal=False)


def _alias_save(book: Book, data: Any, e: dict) -> None:
    alias_save(
        entity=_entity(book, e["entity"]),
        alias=e["alias"],
        valid_from=e.get("valid_from"),
        valid_to=e.get("valid_to"),
        note=e.get("note", ""),
        previous=e.get("previous"),
        journal=False,
    )


def _alias_delete(book: Book, data: Any, e: dict) -> None:
    row = Alias.objects.filter(book=book, entity__entity_id=e["entity"], alias=e["alias"]).first()
    if row is None:
        raise NotFound(f"实体 {e['entity']} 没有别名 '{e['alias']}'", extra={"alias": e["alias"]})
    alias_delete(alias=row, journal=False)


def _state_change_edit(book: Book, data: Any, e: dict) -> None:
    state_change_edit(
        change=state_change_find(book=book, key=e["key"]),
        chapter=e["chapter"],
        field=e["field"],
        op=e["change"],
        new=e.get("new"),
        old=e.get("old"),
        reason=e.get("reason", ""),
        journal=False,
    )


def _state_change_delete(book: Book, data: Any, e: dict) -> None:
    state_change_delete(change=state_change_find(book=book, key=e["key"]), journal=False)


def _relationship_save(book: Book, data: Any, e: dict) -> None:
    relationship_save(
        book=book,
        key=e["key"],
        from_entity=_entity(book, e["from"]),
        to_entity=_entity(book, e["to"]),
        type=e["type"],
        events=e["events"],
        journal=False,
    )


def _relationship_delete(book: Book, data: Any, e: dict) -> None:
    relationship_delete(relationship=relationship_find(book=book, key=e["key"]), journal=False)


def _legacy_import(book: Book, data: Any, e: dict) -> None:
    if not isinstance(data, dict):
        raise InvalidInput(f"{journal_attachment_path(event=e)} 的顶层必须是对象", extra={"path": LOG_PATH})
    legacy_state_import(root=Path(book.root), state=data, book_slug=book.slug, source_path=e["source_path"])


def _memory_import(book: Book, data: Any, e: dict) -> None:
    scratchpad_import(book=book, data=data, replace=bool(e.get("replace")), journal=False)


# op → how to apply it again; an op written by a service and missing here is a test failure
# (tests/bookfiles/test_journal.py checks every op of a full session replays).
def _story_setting(book: Book, data: Any, e: dict) -> None:
    if not isinstance(data, dict):
        raise TypeError("story.setting.save 的附件应是 JSON 对象")
    story_setting_save(
        book=book,
        chapter=e["chapter"],
        query=e["query"],
        explicit_genre=e["explicit_genre"],
        overrides=e["overrides"],
        added_anti_patterns=e["added_anti_patterns"],
        data=data,
    )


def _discovery_queue(book: Book, data: Any, e: dict) -> None:
    discovery_queue_replay(book=book, items=data)


def _discovery_item(book: Book, key: dict) -> Any:
    return pending_item_find(book=book, chapter=key["chapter"], kind=key["kind"], payload=key["payload"])


def _discovery_merge(book: Book, data: Any, e: dict) -> None:
    discovery_merge(items=[_discovery_item(book, key) for key in e["items"]], journal=False)


def _discovery_split(book: Book, data: Any, e: dict) -> None:
    discovery_split(item=_discovery_item(book, e["item"]), aliases=e["aliases"], journal=False)


REPLAYERS: dict[str, Replayer] = {
    "discovery.queue": _discovery_queue,
    "discovery.merge": _discovery_merge,
    "discovery.split": _discovery_split,
    "extraction.ingest": _extraction_ingest,
    "pending.confirm": _pending_confirm,
    "pending.reject": _pending_reject,
    "entity.merge": _entity_merge,
    "entities.archive": _entities_archive,
    "aliases.generic": _aliases_generic,
    "state_change.record": _state_change,
    "memory.fact.observe": _fact_observe,
    "memory.fact.revise": _fact_revise,
    "memory.fact.close": _fact_close,
    "memory.fact.decide": _fact_decide,
    "story.setting.save": _story_setting,
    "entity.create": _entity_create,
    "entity.edit": _entity_edit,
    "alias.save": _alias_save,
    "alias.delete": _alias_delete,
    "state_change.edit": _state_change_edit,
    "state_change.delete": _state_change_delete,
    "relationship.save": _relationship_save,
    "relationship.delete": _relationship_delete,
    "memory.import": _memory_import,
    "legacy.state.import": _legacy_import,
}


def _derived_follow(*, book: Book, events: list[dict[str, Any]]) -> None:
    """What the writers of these events would have re-derived after their commit (they died first, or
    were replayed): memory facts of the chapters and entities they name, the ingested chapters' too."""
    journal_follow(book=book, events=events)
    ingested = sorted(
        {e["chapter"] for e in events if e.get("op") == "extraction.ingest" and isinstance(e.get("chapter"), int)}
    )
    if ingested:
        after_chapter_hooks_schedule(book=book, numbers=ingested, removed=[])


def journal_replay(
    *, book: Book, root: Path, warnings: list[dict] | None = None, follow: bool = False
) -> dict[str, int]:
    """Apply every event of ``root``'s journal that ``book`` has not applied, in seq order, inside the
    caller's transaction, after applying again the extraction files edited since they were applied;
    returns how many of each op were applied (``extraction.edited``: the edited files). An invalid
    event raises InvalidInput naming the log's line (the caller's transaction leaves the database as
    it was); one that no longer applies is appended to ``warnings`` (``journal_skipped``) and left
    unapplied. ``follow`` (a sync; a rebuild derives everything after it anyway): what depends on the
    applied events is re-derived after the commit (``_derived_follow``)."""
    applied = journal_applied_seqs(book=book)
    events = journal_events(root=root, book=book)
    replayed: dict[str, int] = {}
    pending = [e for e in events if e["seq"] not in applied]
    if not pending and not applied:
        return replayed
    edited: list[dict[str, Any]] = []
    # Names an event adds are not scanned for event by event (an automaton rebuilt and a chapter
    # rescanned per ingestion): once, at the end, in the chapters where the names that changed occur.
    with mentions_follow(book=book):
        if applied:
            edited = _edited_apply(
                book=book, root=root, events=events, applied=applied, warnings=warnings, replayed=replayed
            )
        _events_apply(book=book, root=root, events=pending, warnings=warnings, replayed=replayed)
    if follow:
        _derived_follow(book=book, events=pending + edited)
    return replayed


def journal_heal_apply(*, book: Book, root: Path, events: list[dict[str, Any]]) -> dict[str, int]:
    """``WEBNOVEL_JOURNAL_HEALER``: apply ``events`` (the log's tail after the last applied event) before
    a writer writes. One that no longer applies is logged and left for the next sync."""
    warnings: list[dict] = []
    with mentions_follow(book=book):
        replayed = _events_apply(book=book, root=root, events=events, warnings=warnings, replayed={})
    _derived_follow(book=book, events=events)
    for warning in warnings:
        logger.warning("journal heal of %s: %s", book.slug, warning["message"])
    return replayed


def _where(event: dict[str, Any]) -> str:
    return f"{journal_line_name(event)}（seq {event['seq']}，{event['op']}）"


@transaction.atomic  # the rows and their marks together, whatever the caller holds
def _events_apply(
    *, book: Book, root: Path, events: list[dict[str, Any]], warnings: list[dict] | None, replayed: dict[str, int]
) -> dict[str, int]:
    # A run of consecutive ingestions (the usual journal) shares what it knows of the book
    # (``IngestKnown``: no per-event lookup of the chapter, its previous extraction, its decisions, the
    # entities' names and ids) and marks its events applied in one INSERT; any other op first writes
    # the marks and drops what the run knew (it may change those rows, or journal and so read the marks).
    known: IngestKnown | None = None
    marks: list[tuple[int, tuple[str, int, int] | None]] = []
    for event in events:
        line = event["_line"]
        where = _where(event)
        replayer = REPLAYERS.get(event["op"])
        if replayer is None:
            raise InvalidInput(f"{where}：未知操作 '{event['op']}'", extra={"path": LOG_PATH, "line": line})
        ingest = event["op"] == "extraction.ingest"
        if not ingest:
            known = None
            if marks:
                journal_applied_mark_many(book=book, marks=marks)
                marks = []
        elif known is None:
            known = ingest_known_load(book=book)
        stamp = None
        try:
            data, stamp = journal_attachment_load(root=root, event=event) if "file" in event else (None, None)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}：{exc.message}", extra={"path": LOG_PATH, "line": line, **exc.extra}) from None
        try:
            if ingest:
                # extraction_ingest is one atomic block (a savepoint here) of its own: no second one
                _extraction_ingest(book, data, event, known)
            else:
                with transaction.atomic():
                    replayer(book, data, event)
        except KeyError as exc:
            raise InvalidInput(f"{where}：缺少字段 {exc.args[0]}", extra={"path": LOG_PATH, "line": line}) from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise InvalidInput(f"{where}：字段无效（{exc}）", extra={"path": LOG_PATH, "line": line}) from None
        except DomainError as exc:
            if warnings is not None:
                warnings.append(
                    {
                        "code": "journal_skipped",
                        "file": LOG_PATH,
                        "line": line,
                        "message": f"{where} 未能重放，已跳过：{exc.message}",
                        "level": "warning",
                    }
                )
            continue
        marks.append((event["seq"], stamp))
        replayed[event["op"]] = replayed.get(event["op"], 0) + 1
    if marks:
        journal_applied_mark_many(book=book, marks=marks)
    return replayed


def _edited_apply(
    *,
    book: Book,
    root: Path,
    events: list[dict[str, Any]],
    applied: set[int],
    warnings: list[dict] | None,
    replayed: dict[str, int],
) -> list[dict[str, Any]]:
    """Apply again the applied extraction files an author edited (hash differs from the recorded one;
    a file whose size and mtime are unchanged is trusted unread, as finalize trusts the book's files)."""
    stamps = journal_applied_stamps(book=book)
    for event in events:
        if event["op"] == "extraction.ingest" and event["seq"] in applied and event["seq"] not in stamps:
            # applied before stamps were recorded: taken as it is now, edits count from here
            try:
                stamps[event["seq"]] = journal_attachment_load(root=root, event=event)[1]
            except InvalidInput:
                continue
            journal_applied_restamp(book=book, seq=event["seq"], stamp=stamps[event["seq"]])
    reapplied: list[dict[str, Any]] = []
    ingests = [e for e in events if e["op"] == "extraction.ingest" and e["seq"] in stamps]
    latest = {e.get("chapter"): e["seq"] for e in ingests}  # the last applied ingestion of each chapter
    for event in ingests:
        sha, size, mtime_ns = stamps[event["seq"]]
        if journal_attachment_stat(root=root, event=event) == (size, mtime_ns):
            continue
        where = _where(event)
        try:
            data, stamp = journal_attachment_load(root=root, event=event)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}：{exc.message}", extra={"path": LOG_PATH, **exc.extra}) from None
        journal_applied_restamp(book=book, seq=event["seq"], stamp=stamp)
        if stamp[0] == sha:
            continue  # touched, not changed
        relative = journal_attachment_path(event=event)
        if latest[event.get("chapter")] != event["seq"]:
            _warn(
                warnings,
                "journal_superseded",
                relative,
                f"{relative} 已修改，但第{event.get('chapter')}章之后又重新抽取过（seq {latest[event.get('chapter')]}），"
                "现有数据以后者为准；重建到空数据库时会按修改后的内容依次重放",
            )
            continue
        try:
            with transaction.atomic():
                _reingest(book=book, chapter=event["chapter"], payload=data)
        except DomainError as exc:
            raise InvalidInput(
                f"{relative}（{where}）修改后无法应用，未做任何改动：{exc.message}",
                extra={"path": relative, **exc.extra},
            ) from None
        except (KeyError, TypeError) as exc:
            raise InvalidInput(f"{where}：字段无效（{exc}）", extra={"path": LOG_PATH}) from None
        replayed["extraction.edited"] = replayed.get("extraction.edited", 0) + 1
        _decisions_check(event=event, data=data, events=events, warnings=warnings)
        reapplied.append(event)
    return reapplied


def _reingest(*, book: Book, chapter: Any, payload: Any) -> None:
    """The re-ingestion of an edited extraction, its chapter's state changes then put back in the order
    a replay gives them: a chapter tag's first, then those written before the ingestion, the ingested
    ones, those written after it (a curator's confirmation since). The replace path alone would put the
    re-ingested rows last."""
    since = Extraction.objects.filter(book=book, chapter=chapter).values_list("updated_at", flat=True).first()
    extraction_ingest(book=book, chapter=chapter, payload=payload, journal=False, hooks=False)
    if since is not None:
        state_changes_order_restore(book=book, chapter=chapter, ingested_at=since)


def _decisions_check(
    *, event: dict[str, Any], data: Any, events: list[dict[str, Any]], warnings: list[dict] | None
) -> None:
    """Later decisions on the chapter's held items that the edited payload no longer holds: their
    results stay (a rebuild into an empty database would skip them) — said, not silent."""
    sections = {
        "entity_new": "entities_new",
        "entity_appeared": "entities_appeared",
        "state_change": "state_changes",
        "relationship": "relationships_new",
        "uncertain": "uncertain",
    }
    held = {
        json.dumps([kind, item], sort_keys=True, ensure_ascii=False, default=str)
        for kind, name in sections.items()
        for item in (data.get(name) or [] if isinstance(data, dict) else [])
    }
    for later in events:
        if later["seq"] <= event["seq"] or later["op"] not in ("pending.confirm", "pending.reject"):
            continue
        if later.get("chapter") != event["chapter"] or later.get("kind") not in sections:
            continue
        key = json.dumps([later["kind"], later.get("payload")], sort_keys=True, ensure_ascii=False, default=str)
        if key not in held:
            _warn(
                warnings,
                "journal_orphaned",
                LOG_PATH,
                f"{_where(later)} 处理的待确认项已不在修改后的 {journal_attachment_path(event=event)} 中："
                "其结果保留；重建到空数据库时此事件会被跳过",
                line=later["_line"],
            )


def _warn(warnings: list[dict] | None, code: str, file: str, message: str, *, line: int | None = None) -> None:
    if warnings is not None:
        warnings.append({"code": code, "file": file, "line": line, "message": message, "level": "warning"})
