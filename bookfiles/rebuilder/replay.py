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
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import transaction

from core.journal import LOG_PATH, journal_applied_mark, journal_applied_seqs, journal_attachment_read, journal_events
from core.models import Book
from entities.mentions import mentions_follow
from entities.models import Alias, Entity
from entities.selectors import entity_get
from entities.services.ingest import extraction_ingest
from entities.services.marks import aliases_generic_set, entity_merge
from entities.services.pending import pending_item_confirm, pending_item_find, pending_item_reject
from entities.services.writes import entities_archive, state_change_curate
from kernel.exceptions import DomainError, InvalidInput
from memory.services import fact_close, fact_decide, fact_get, fact_observe, fact_revise

Replayer = Callable[[Book, Any, dict[str, Any]], None]  # (book, the event's attachment or None, event)


def _entity(book: Book, ref: str | None) -> Entity | None:
    return None if ref is None else entity_get(book=book, ref=ref)


def _extraction_ingest(book: Book, payload: Any, e: dict) -> None:
    extraction_ingest(book=book, chapter=e["chapter"], payload=payload, journal=False, hooks=False)


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


# op → how to apply it again; an op written by a service and missing here is a test failure
# (tests/bookfiles/test_journal.py checks every op of a full session replays).
REPLAYERS: dict[str, Replayer] = {
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
}


def journal_replay(*, book: Book, root: Path, warnings: list[dict] | None = None) -> dict[str, int]:
    """Apply every event of ``root``'s journal that ``book`` has not applied, in seq order, inside the
    caller's transaction; returns how many of each op were applied. An invalid event raises
    InvalidInput naming the log's line (the caller's transaction leaves the database as it was); one
    that no longer applies is appended to ``warnings`` (``journal_skipped``) and left unapplied."""
    applied = journal_applied_seqs(book=book)
    replayed: dict[str, int] = {}
    # Names an event adds are not scanned for event by event (an automaton rebuilt and a chapter
    # rescanned per ingestion): once, at the end, in the chapters where the names that changed occur.
    events = [event for event in journal_events(root=root) if event["seq"] not in applied]
    if not events:
        return replayed
    with mentions_follow(book=book):
        for event in events:
            line = event["_line"]
            where = f"{LOG_PATH} 第{line}行（seq {event['seq']}，{event['op']}）"
            replayer = REPLAYERS.get(event["op"])
            if replayer is None:
                raise InvalidInput(f"{where}：未知操作 '{event['op']}'", extra={"path": LOG_PATH, "line": line})
            try:
                data = journal_attachment_read(root=root, event=event) if "file" in event else None
            except InvalidInput as exc:
                raise InvalidInput(
                    f"{where}：{exc.message}", extra={"path": LOG_PATH, "line": line, **exc.extra}
                ) from None
            try:
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
            journal_applied_mark(book=book, seq=event["seq"])
            replayed[event["op"]] = replayed.get(event["op"], 0) + 1
    return replayed
