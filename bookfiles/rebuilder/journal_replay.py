"""Replay of the book folder's journal (``core.journal``): every event not yet applied to the
database, in seq order, through the same service that wrote it (with ``journal=False``, so a replay
never journals again), then marked applied (``JournalApplied``) in the same transaction.

Called by the rebuild (after the file-derived rows and their indexers, in the rebuild's transaction)
and by sync (which so heals an event whose writer crashed between the file and the commit).

Every op is declared once, with its replayer, in the app that owns the write (``<app>/journal_ops.py``,
registered into ``kernel.journal_ops``); this module knows the journal's order, marks, savepoints and
error rules, and no app's services.

A log or payload that is not valid (bad JSON, a missing or mistyped field, an unknown op) stops the
rebuild with an error naming the file and line, like a broken author's file. An event that is valid
but no longer applies (the author deleted the chapter it ingested, an entity it names is gone) is
skipped with a warning naming its line, in its own savepoint, and stays unapplied: the folder keeps
it, and a later sync tries it again.

An extraction file an author edited by hand after it was applied (its sha256 differs from the one
recorded with ``JournalApplied``) is applied again, by rebuild over a database and by sync, through
the re-ingestion (replace) path; a file that is not valid JSON stops the sync with an error naming it
(nothing changes), as it stops a rebuild. A valid file the ingestion refuses (an unknown field, an
unknown entity) is, by sync and by a rebuild into an empty database alike, set aside for the event's own
record (the payload its log line carries): the event is applied as it was logged (sync leaves it where
the database already holds it so, with what later events made of it), a
``journal_edit_refused`` warning names the file, the log line and the reason, and the author's edit stays
in the file until they fix it (the next sync then applies it). A later decision on an item the edited
file no longer holds keeps its result and is reported as a warning (a rebuild into an empty database
applies it to the item as the decision recorded it: the same result).

Writers also call ``journal_heal_apply`` (through ``core.journal.journal_heal``) before they write:
the events a crashed writer left after the last applied one are applied first, so a retried write
never lands before the event it retried.
"""

import logging
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
    journal_logged_sha,
)
from core.models import Book
from kernel.exceptions import DomainError, InvalidInput
from kernel.indexing import after_chapter_hooks_schedule
from kernel.journal_ops import JournalOp, journal_op_get, journal_ops_load, journal_replay_wrapped

logger = logging.getLogger(__name__)


def _derived_follow(*, book: Book, events: list[dict[str, Any]]) -> None:
    """What the writers of these events would have re-derived after their commit (they died first, or
    were replayed): memory facts of the chapters and entities they name, the ingested chapters' too."""
    journal_follow(book=book, events=events)
    ops = journal_ops_load()
    ingested = sorted(
        {
            e["chapter"]
            for e in events
            if e.get("op") in ops and ops[e["op"]].follows_chapter and isinstance(e.get("chapter"), int)
        }
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
    # the apps' wrappers around a whole replay (the entities app's: names scanned for once, at the end)
    with journal_replay_wrapped(book=book):
        if applied:
            edited = _edited_apply(
                book=book, root=root, events=events, applied=applied, warnings=warnings, replayed=replayed
            )
        _events_apply(book=book, root=root, events=pending, warnings=warnings, replayed=replayed)
    if follow:
        _derived_follow(book=book, events=pending + edited)
    return replayed


def journal_heal_apply(*, book: Book, root: Path, events: list[dict[str, Any]]) -> dict[str, int]:
    """The journal's healer (registered into ``core.journal`` by ``BookfilesConfig.ready()``): apply
    ``events`` (the log's tail after the last applied event) before a writer writes. One that no longer
    applies is logged and left for the next sync."""
    warnings: list[dict] = []
    with journal_replay_wrapped(book=book):
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
    # A run of consecutive events of an op with a ``run_state`` (ingestions: the usual journal) shares
    # what it knows of the book (``IngestKnown``: no per-event lookup of the chapter, its previous
    # extraction, its decisions, the entities' names and ids) and marks its events applied in one
    # INSERT; any other op first writes the marks and drops what the run knew (it may change those
    # rows, or journal and so read the marks).
    state: Any = None
    run: str | None = None  # the op of the current run
    marks: list[tuple[int, tuple[str, int, int] | None]] = []
    for event in events:
        line = event["_line"]
        where = _where(event)
        declared = journal_op_get(event["op"])
        if declared is None:
            raise InvalidInput(f"{where}：未知操作 '{event['op']}'", extra={"path": LOG_PATH, "line": line})
        if declared.run_state is None:
            state, run = None, None
            if marks:
                journal_applied_mark_many(book=book, marks=marks)
                marks = []
        elif run != declared.op:
            state, run = declared.run_state(book=book), declared.op
        stamp = None
        try:
            data, stamp = journal_attachment_load(root=root, event=event) if "file" in event else (None, None)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}：{exc.message}", extra={"path": LOG_PATH, "line": line, **exc.extra}) from None
        try:
            try:
                _apply(declared, book, data, event, state)
            except DomainError as exc:
                if not _as_logged(declared, event, data):
                    raise
                if marks:  # the run's state is read again: the refused attempt may have changed it
                    journal_applied_mark_many(book=book, marks=marks)
                    marks = []
                state = declared.run_state(book=book) if declared.run_state is not None else None
                _apply(declared, book, event["data"], event, state)
                _refused_warn(warnings, event=event, exc=exc)
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


def _apply(declared: JournalOp, book: Book, data: Any, event: dict[str, Any], state: Any) -> None:
    extra = {"state": state} if declared.run_state is not None else {}
    if not declared.savepoint:  # the replayer is one atomic block (a savepoint here) of its own
        declared.replay(book, data, event, **extra)
        return
    with transaction.atomic():
        declared.replay(book, data, event, **extra)


def _edited_apply(
    *,
    book: Book,
    root: Path,
    events: list[dict[str, Any]],
    applied: set[int],
    warnings: list[dict] | None,
    replayed: dict[str, int],
) -> list[dict[str, Any]]:
    """Apply again the applied attachments an author edited (hash differs from the recorded one; a file
    whose size and mtime are unchanged is trusted unread, as finalize trusts the book's files), of the
    ops that declare a ``reapply`` (the extractions)."""
    ops = journal_ops_load()
    reapplied_ops = {op for op, declared in ops.items() if declared.reapply is not None}
    stamps = journal_applied_stamps(book=book)
    for event in events:
        if event["op"] in reapplied_ops and event["seq"] in applied and event["seq"] not in stamps:
            # applied before stamps were recorded: taken as it is now, edits count from here
            try:
                stamps[event["seq"]] = journal_attachment_load(root=root, event=event)[1]
            except InvalidInput:
                continue
            journal_applied_restamp(book=book, seq=event["seq"], stamp=stamps[event["seq"]])
    reapplied: list[dict[str, Any]] = []
    ingests = [e for e in events if e["op"] in reapplied_ops and e["seq"] in stamps]
    # the last applied ingestion of each chapter
    latest = {(e["op"], e.get("chapter")): e["seq"] for e in ingests}
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
        last = latest[(event["op"], event.get("chapter"))]
        if last != event["seq"]:
            _warn(
                warnings,
                "journal_superseded",
                relative,
                f"{relative} 已修改，但第{event.get('chapter')}章之后又重新抽取过（seq {last}），"
                "现有数据以后者为准；重建到空数据库时会按修改后的内容依次重放",
            )
            continue
        declared = ops[event["op"]]
        try:
            try:
                with transaction.atomic():
                    declared.reapply(book, event, data, events)
            except DomainError as refused:
                if not _as_logged(declared, event, data):
                    raise
                if sha != journal_logged_sha(event=event):
                    # an earlier edit was applied: back to the event as its line recorded it, as a rebuild
                    with transaction.atomic():
                        declared.reapply(book, event, event["data"], events)
                # else the database holds the event as logged, and what later events made of it (a
                # curator's edit of an ingested state change): applying it again would undo those
                _refused_warn(warnings, event=event, exc=refused)
                data = event["data"]
        except DomainError as exc:
            raise InvalidInput(
                f"{relative}（{where}）修改后无法应用，未做任何改动：{exc.message}",
                extra={"path": relative, **exc.extra},
            ) from None
        except (KeyError, TypeError) as exc:
            raise InvalidInput(f"{where}：字段无效（{exc}）", extra={"path": LOG_PATH}) from None
        replayed["extraction.edited"] = replayed.get("extraction.edited", 0) + 1
        _orphans_warn(declared=declared, event=event, data=data, events=events, warnings=warnings)
        reapplied.append(event)
    return reapplied


def _as_logged(declared: JournalOp, event: dict[str, Any], data: Any) -> bool:
    """Whether a refused attachment falls back to the event's own record: an attachment the ops
    re-apply (an extraction), hand-edited (it differs from the ``data`` its log line carries)."""
    return declared.reapply is not None and "data" in event and data != event["data"]


def _refused_warn(warnings: list[dict] | None, *, event: dict[str, Any], exc: DomainError) -> None:
    """A hand-edited attachment the write refuses: sync and rebuild alike apply the event as its log line
    recorded it, and say so (the edit stays in the file; once fixed, the next sync applies it)."""
    relative = journal_attachment_path(event=event)
    _warn(
        warnings,
        "journal_edit_refused",
        LOG_PATH,
        f"{relative} 修改后无法应用（{exc.message.removesuffix('；未做任何改动')}），已按 {_where(event)} 记录的原内容应用；"
        "文件中的修改保留，改正后再 sync 即按修改后的内容应用",
        line=event["_line"],
    )


def _orphans_warn(
    *,
    declared: JournalOp,
    event: dict[str, Any],
    data: Any,
    events: list[dict[str, Any]],
    warnings: list[dict] | None,
) -> None:
    """Later decisions on the chapter's held items that the edited payload no longer holds: their
    results stay (a rebuild into an empty database applies them to the items they recorded) — said,
    not silent."""
    if declared.reapply_orphans is None:
        return
    for later in declared.reapply_orphans(event, data, events):
        _warn(
            warnings,
            "journal_orphaned",
            LOG_PATH,
            f"{_where(later)} 处理的待确认项已不在修改后的 {journal_attachment_path(event=event)} 中："
            "其结果保留（重建到空数据库时按该事件记录的待确认项重放，结果相同）",
            line=later["_line"],
        )


def _warn(warnings: list[dict] | None, code: str, file: str, message: str, *, line: int | None = None) -> None:
    if warnings is not None:
        warnings.append({"code": code, "file": file, "line": line, "message": message, "level": "warning"})
