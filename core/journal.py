"""The book folder's journal: every write that does not come from the author's files, as plain files
in ``<book>/.journal/`` (a dot folder the parser and the author's tools skip), so that a rebuild into
an empty database gives back what agents and curators wrote (``bookfiles.rebuilder.journal_replay``).

Layout (docs/book-format.md):

- ``log.jsonl`` — append-only JSON Lines, one event a line: ``{"seq": n, "op": "...", ...args}``,
  UTF-8 (``ensure_ascii=False``), keys in the order the service gives them (the keys of nested objects
  sorted, so SQLite and PostgreSQL write the same line), no clock: replaying the
  same log gives the same rows. Rows are named by stable keys (entity ids, chapter numbers, fact keys,
  a pending item's chapter + kind + payload), never by a database id.
- ``extractions/<chapter:04d>-<seq:06d>.json`` — the payload of one ingestion (pretty, readable),
  named by its ``extraction.ingest`` event (``"file"``): a re-ingestion is a new file, so history is exact.
  The event carries the payload too (``"data"``): the line is the durable record (one fsync per write),
  the file its readable copy, written without fsync and rewritten from the line when a crash lost it;
  an author's edit of the file is what a replay ingests.

Atomicity (one rule for every service): a service writes its rows, then calls ``journal_append`` as
the last step of its transaction. ``journal_append`` appends the event to the file (fsync) and inserts
``JournalApplied(book, seq)`` in the same transaction. A crash after the file and before the commit
leaves an event without its ``JournalApplied`` row: the next ``rebuild`` / ``sync`` applies it (the
event is the truth), and an event with its row is never applied again. The one case this does not
cover: a caller that catches the service's success and then rolls its own outer transaction back
leaves the event in the file, so the next sync applies it — no service in the project does that.

Order: a journaling service takes ``journal_lock`` first (the book's write lock, then ``journal_heal``):
events newer than the last applied one are applied before the service writes, so a write retried after
a crash lands after the crashed one, in the rows as in the log. The stamp of an attachment (sha256,
size, mtime) is recorded with ``JournalApplied`` so a sync sees a hand edit of an applied extraction.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from django.db.models import Max

from core.followups import follow_ups_complete
from core.lazybuild import book_files_writing_heal
from core.locks import book_write_lock
from core.models import Book, JournalApplied
from kernel.exceptions import Conflict, InvalidInput
from kernel.indexing import after_chapter_hooks_schedule
from kernel.interfaces import target_resolve
from kernel.safefs import book_file_append, book_file_write, regular_file_open, regular_file_read

logger = logging.getLogger(__name__)

JOURNAL_DIR = ".journal"
LOG_NAME = "log.jsonl"
LOG_PATH = f"{JOURNAL_DIR}/{LOG_NAME}"
MAX_LOG_BYTES = 1 << 30
MAX_ATTACHMENT_BYTES = 64 << 20
# What one event may carry (its line, in UTF-8). Bodies are capped at 10 MB (DATA_UPLOAD_MAX_MEMORY_SIZE),
# so a real ingestion fits; a bigger line is refused at write time, and a replay reads one line at a
# time, never more than this (a 100 MB fact value was accepted and replayed at 1.2 GB RSS).
MAX_EVENT_BYTES = 16 << 20
# The first line of a log names its book: {"seq": 0, "op": "journal.book", "book": slug, "id": random}.
IDENTITY_OP = "journal.book"
JOURNAL_FOREIGN = "journal_foreign"
EVENT_TOO_LARGE = "journal_event_too_large"
# What applies a crashed writer's events (``journal_healer_register``); None: no app replays the journal.
_healer: Callable[..., dict[str, int]] | str | None = None


def journal_folder(*, book: Book) -> Path | None:
    """The book's folder when there is one to journal into (a book made without a folder — a test
    factory, an API-only book — has nothing to hold a journal)."""
    root = (book.root or "").strip()
    if not root or not os.path.isdir(root):
        return None
    return Path(root)


def _last_seq(root: Path) -> int:
    """The seq of the log's last whole line (read from the tail, not the whole file)."""
    fh = _log_open(root=root)
    if fh is None:
        return 0
    with fh:
        size = os.fstat(fh.fileno()).st_size
        start = max(0, size - 65536)
        fh.seek(start)
        tail = fh.read()
    lines = tail.split(b"\n")
    # the part after the last newline is empty, a torn line (not an event) or a whole event an editor
    # saved without its final newline (an event: the next append keeps it)
    last = _whole_event(lines[-1]) if lines[-1].strip() else None
    if last is not None:
        return last["seq"]
    for line in reversed(lines[:-1] if len(lines) > 1 else []):
        if line.strip():
            try:
                return int(json.loads(line)["seq"])
            except (ValueError, KeyError, TypeError):
                break
    # a line longer than the tail (or a damaged one): read the log properly
    events = journal_events(root=root)
    return events[-1]["seq"] if events else 0


def _sorted(value: Any) -> Any:
    """Nested objects with their keys sorted: a payload read back from PostgreSQL's jsonb comes in
    another key order than from SQLite, and the log must read the same whatever the database."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def journal_append(*, book: Book, op: str, attachment: tuple[str, Any] | None = None, **args: Any) -> int | None:
    """Append one event to the book's journal, inside the caller's transaction and after its rows;
    returns its seq (None when the book has no folder).

    ``attachment`` = (stem, JSON data): the event carries it as ``"data"`` (the durable record: the
    line is the one write that is fsynced) and names its readable copy ``.journal/<stem>-<seq:06d>.json``
    (pretty) as ``"file"``, written first without fsync (``journal_attachment_read`` rewrites a copy
    the machine lost from the line).

    Refused, with nothing written: a log that names another book (``journal_foreign``, 409) and an
    event over ``MAX_EVENT_BYTES`` (``journal_event_too_large``, 422). A new log starts with the line
    naming its book; an old one without it is given it here (adopted: rewritten once, atomically)."""
    root = journal_folder(book=book)
    if root is None:
        return None
    header = journal_identity_check(book=book, root=root)
    applied = JournalApplied.objects.filter(book=book).aggregate(m=Max("seq"))["m"] or 0
    seq = max(_last_seq(root), applied) + 1
    event: dict[str, Any] = {"seq": seq, "op": op}
    data = None
    if attachment is not None:
        stem, data = attachment[0], _sorted(attachment[1])
        event["file"] = f"{stem}-{seq:06d}.json"
    event.update({name: _sorted(value) for name, value in args.items()})
    if data is not None:
        event["data"] = data
    line = _line(event)
    size = len(line.encode("utf-8"))
    if size > MAX_EVENT_BYTES:
        raise InvalidInput(
            f"这次写入过大，无法记入书籍日志：{size} 字节，单个事件上限 {MAX_EVENT_BYTES} 字节"
            f"（{op}）。未写入任何内容；请拆小后再写",
            extra={"code": EVENT_TOO_LARGE, "op": op, "bytes": size, "max_bytes": MAX_EVENT_BYTES},
        )
    stamp: tuple[str, int, int] | None = None
    if data is not None:
        raw = _attachment_text(data).encode("utf-8")
        written = book_file_write(root=root, relative=f"{JOURNAL_DIR}/{event['file']}", text=raw, durable=False)
        stat = os.stat(written)
        stamp = (hashlib.sha256(raw).hexdigest(), stat.st_size, stat.st_mtime_ns)
    if header is None:
        line = _identity_adopt(book=book, root=root) + line
    book_file_append(root=root, relative=LOG_PATH, text=line, tail_whole=_tail_whole, tail_max=MAX_EVENT_BYTES)
    journal_applied_mark(book=book, seq=seq, stamp=stamp)
    journal_follow(book=book, events=[event])
    return seq


def _line(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def _tail_whole(line: bytes) -> bool:
    return _whole_event(line) is not None


def _whole_event(line: bytes) -> dict[str, Any] | None:
    """The event a line without its newline holds when it is a whole one (a JSON object with an integer
    seq and a string op: no proper prefix of such a line is one), None for a torn line (cut anywhere,
    inside a UTF-8 character too)."""
    try:
        event = json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        return None
    if isinstance(event, dict) and isinstance(event.get("seq"), int) and isinstance(event.get("op"), str):
        return event
    return None


def journal_header(*, root: Path) -> dict[str, Any] | None:
    """The log's first line when it names its book (``IDENTITY_OP``), else None (no log, an empty one, or
    an old log that starts with its first event). Reads the first 4 KB only."""
    fh = _log_open(root=Path(root))
    if fh is None:
        return None
    with fh:
        head = fh.read(4096)
    first = head.split(b"\n", 1)[0]
    event = _whole_event(first)
    if event is None or event["op"] != IDENTITY_OP:
        return None
    if event["seq"] != 0 or not isinstance(event.get("book"), str) or not isinstance(event.get("id"), str):
        raise InvalidInput(
            f'{LOG_PATH} 第1行（书籍标识）应为 {{"seq": 0, "op": "{IDENTITY_OP}", "book": …, "id": …}}',
            extra={"path": LOG_PATH, "line": 1},
        )
    return event


def journal_identity_check(*, book: Book, root: Path) -> dict[str, Any] | None:
    """The log's identity line, after checking it names ``book``: the same slug, and the id the database
    recorded (a database that has none — a rebuild into an empty one, a book from before identities —
    records the log's). A log that names another book is refused (``Conflict``, ``journal_foreign``):
    its events are another book's, and their seqs would be taken for this book's. None: no identity yet."""
    header = journal_header(root=root)
    if header is None:
        return None
    recorded = book.journal_id
    if header["id"] != recorded:
        recorded = Book.objects.filter(pk=book.pk).values_list("journal_id", flat=True).first() or ""
    if header["book"] != book.slug or (recorded and header["id"] != recorded):
        raise Conflict(
            f"{LOG_PATH} 属于另一本书：第1行记的是《{header['book']}》（标识 {header['id']}），"
            f"这本书是 {book.slug}"
            + (f"（标识 {recorded}）" if recorded else "")
            + "。若它是随文件夹从别的书复制来的，请移走 .journal/ 文件夹；若确是本书的日志（例如书改了 slug），"
            "请把第1行的 book 与 id 改为本书的（见 docs/book-format.md，日志的书籍标识）。未改动任何内容",
            extra={
                "code": JOURNAL_FOREIGN,
                "path": LOG_PATH,
                "line": 1,
                "book": book.slug,
                "journal_book": header["book"],
                "journal_id": header["id"],
                "recorded_id": recorded,
            },
        )
    if not recorded:
        Book.objects.filter(pk=book.pk).update(journal_id=header["id"])
    book.journal_id = header["id"]
    return header


def _identity_adopt(*, book: Book, root: Path) -> str:
    """The identity line for a log that has none: returned to be appended with the first event of a new
    log; an old log with events is rewritten once with it on top (atomically: temporary file, rename)."""
    if not book.journal_id:
        book.journal_id = Book.objects.filter(pk=book.pk).values_list(
            "journal_id", flat=True
        ).first() or secrets.token_hex(16)
        Book.objects.filter(pk=book.pk).update(journal_id=book.journal_id)
    header = _line({"seq": 0, "op": IDENTITY_OP, "book": book.slug, "id": book.journal_id})
    path = root / LOG_PATH
    try:
        raw, _ = regular_file_read(path, max_bytes=MAX_LOG_BYTES, root=root)
    except FileNotFoundError:
        return header
    except OSError as exc:
        raise InvalidInput(f"{LOG_PATH}：{exc.strerror or exc}", extra={"path": LOG_PATH}) from None
    book_file_write(root=root, relative=LOG_PATH, text=header.encode("utf-8") + (raw if raw.strip() else b""))
    return ""


# Ops whose writer schedules its own re-derivation (an ingestion reports its hook failures), and ops
# that change no input of a derived table (memory facts and story settings are themselves the rows).
_SELF_FOLLOWING = ("extraction.ingest", "memory.", "story.", "legacy.")
_ENTITY_KEYS = ("entity", "source", "target", "from", "to", "entity_id", "id", "adopted")


def journal_scope(*, events: list[dict[str, Any]]) -> tuple[list[int], list[str]]:
    """The chapters and the entity ids that these events name: what derived state (memory facts) may
    depend on what they changed (docs/architecture.md, "Derived state")."""
    chapters: set[int] = set()
    entities: set[str] = set()

    def walk(value: Any, name: str = "") -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, key)
        elif isinstance(value, list):
            if name == "key" and len(value) == 3 and all(isinstance(v, str) for v in value):
                entities.update(value[:2])  # a relationship's key: from, to, type
                return
            for item in value:
                walk(item, name)
        elif name == "chapter" and isinstance(value, int) and not isinstance(value, bool):
            chapters.add(value)
        elif isinstance(value, str) and value and name in (*_ENTITY_KEYS, "entities", "aliases"):
            entities.add(value)

    for event in events:
        if not event.get("op", "").startswith(_SELF_FOLLOWING):
            at_chapter = _at_chapter(event)
            for key, value in event.items():
                if key not in ("seq", "op", "file", "data", "_line") and not (at_chapter and key in _AT_CHAPTER_KEYS):
                    walk(value, key)
    return sorted(chapters), sorted(entities)


# A new state change (recorded, or a held one confirmed as it was held) changes its entity's rows at the
# chapter it names, not the entity as a whole (name, type, id): the chapter alone is its scope (the memory
# hook follows the (entity, field) pairs of that chapter to their later chapters itself).
_AT_CHAPTER_KEYS = ("entity", "payload")


def _at_chapter(event: dict[str, Any]) -> bool:
    op = event.get("op", "")
    held = op == "pending.confirm" and event.get("kind") == "state_change" and event.get("entity") is None
    return isinstance(event.get("chapter"), int) and (op == "state_change.record" or held)


def journal_follow(*, book: Book, events: list[dict[str, Any]]) -> None:
    """The one rule of derived state for journaled writes: after the commit of the write, re-derive what
    depends on the chapters and entities its events name (the after-chapter hooks: memory facts). Called
    by ``journal_append`` for every journaled write, whatever door it came through, and by the heal and
    the sync's replay for the events they apply."""
    events = [e for e in events if not e.get("op", "").startswith(_SELF_FOLLOWING)]
    if not events:
        return
    chapters, entities = journal_scope(events=events)
    after_chapter_hooks_schedule(book=book, numbers=chapters, removed=[], entities=entities)


def journal_healer_register(fn: Callable[..., dict[str, int]] | str) -> None:
    """Register ``fn(book=, root=, events=) -> {op: count}``, which applies a crashed writer's events:
    the function, or the registering app's own dotted path to it, imported on the first heal (the book
    files app registers its replay in ``BookfilesConfig.ready()``; importing the rebuilder there would
    cost every ``django.setup()``)."""
    global _healer
    _healer = fn


def journal_lock(*, book: Book, heal: bool = True) -> dict[str, int]:
    """The lock a journaling writer takes first: the book's write lock (``core.locks``), then, unless
    ``heal`` is False (a replay), the log's events newer than the last applied one — a writer that
    crashed between its append and its commit — applied before the caller writes, so the rows follow
    the log's order (a retried write lands after the event it retried, never before it). Returns what
    the heal applied (empty when nothing was pending): a caller holding a row refreshes it then."""
    book_write_lock(book=book)
    return journal_heal(book=book) if heal else {}


def journal_heal(*, book: Book) -> dict[str, int]:
    """Apply the events after the last applied one (read from the log's tail, not the whole log)
    through the registered healer (``journal_healer_register``: the replay lives in the book-files app,
    above this one); returns how many of each op were applied. Cost when nothing is pending: one query,
    one tail read. A follow-up a writer left uncompleted (``core.followups``) is completed first, and an
    author's file it was rewriting re-read (``core.lazybuild.book_files_writing_heal``)."""
    follow_ups_complete(book=book)
    book_files_writing_heal(book=book)
    root = journal_folder(book=book)
    if root is None or _healer is None:
        return {}
    journal_identity_check(book=book, root=root)  # another book's events are never healed into this one
    applied = JournalApplied.objects.filter(book=book).aggregate(m=Max("seq"))["m"] or 0
    if _last_seq(root) <= applied:
        return {}
    events = journal_tail(root=root, after=applied)
    if not events:
        return {}
    logger.info("journal: applying %d event(s) of %s left by a crashed writer", len(events), book.slug)
    return target_resolve(_healer)(book=book, root=root, events=events)


def journal_tail(*, root: Path, after: int) -> list[dict[str, Any]]:
    """The whole events of the log with a seq above ``after``, read backwards from the end in blocks
    until a line at or below ``after`` (their ``_line`` is None: the lines before are not counted)."""
    fh = _log_open(root=Path(root))
    if fh is None:
        return []
    with fh:
        size = os.fstat(fh.fileno()).st_size
        block, end, data, whole, lines = 65536, size, b"", [], []
        while end > 0:
            start = max(0, end - block)
            fh.seek(start)
            data = fh.read(end - start) + data
            end = start
            lines = data.split(b"\n")
            whole = lines[1:-1] if start > 0 else lines[:-1]  # the first may be cut, the last is torn or empty
            if start == 0 or _reaches(whole, after):
                break
    last = _whole_event(lines[-1]) if lines and lines[-1].strip() else None  # saved without its final newline
    events = [last | {"_line": None}] if last is not None and last["seq"] > after else []
    for line in whole:
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            raise InvalidInput(f"{LOG_PATH} 末尾有一行不是合法的 JSON", extra={"path": LOG_PATH}) from None
        if not isinstance(event, dict) or not isinstance(event.get("seq"), int) or not isinstance(event.get("op"), str):
            raise InvalidInput(f"{LOG_PATH} 末尾有一行不是含整数 seq 与字符串 op 的对象", extra={"path": LOG_PATH})
        if event["seq"] > after:
            event["_line"] = None
            events.append(event)
    events.sort(key=lambda e: e["seq"])
    return events


def _reaches(lines: list[bytes], after: int) -> bool:
    """Whether one of these whole lines is an event at or below seq ``after`` (the tail read can stop)."""
    for line in lines:
        try:
            if int(json.loads(line)["seq"]) <= after:
                return True
        except (ValueError, KeyError, TypeError):
            continue
    return False


def _attachment_text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def journal_logged_sha(*, event: dict[str, Any]) -> str | None:
    """The sha256 of an event's attachment as its log line records it (``data``), the stamp its copy
    carries while no one has edited it; None for a line that carries no data."""
    if "data" not in event:
        return None
    return hashlib.sha256(_attachment_text(event["data"]).encode("utf-8")).hexdigest()


def journal_events(*, root: Path, book: Book | None = None) -> list[dict[str, Any]]:
    """Every whole event of ``<root>/.journal/log.jsonl`` in seq order, or InvalidInput naming the
    file and line of the first one that is not a JSON object with an integer seq and an op. The last
    line, when it has no newline, is an event if it is a whole one (an editor dropped the newline), and
    otherwise a torn line — its writer died before the fsync, cut anywhere, inside a UTF-8 character
    too — which is not an event. The identity line (line 1) is not an event; with ``book``, it must
    name that book (``journal_identity_check``). Read one line at a time, none over ``MAX_EVENT_BYTES``."""
    path = Path(root) / LOG_PATH
    if not path.is_file():
        return []
    if book is not None:
        journal_identity_check(book=book, root=Path(root))
    events, seen = [], set()
    for number, line, ended in _log_lines(root=Path(root)):
        if not line.strip():
            continue
        if not ended:
            event = _whole_event(line)
            if event is None:
                break  # a torn last line
        else:
            event = _event_parse(line, number)
        if event["op"] == IDENTITY_OP:
            if number != 1:
                raise InvalidInput(
                    f"{LOG_PATH} 第{number}行：书籍标识（{IDENTITY_OP}）只能在第1行（是否把另一本书的日志接在了后面？）",
                    extra={"path": LOG_PATH, "line": number, "code": JOURNAL_FOREIGN},
                )
            continue
        if event["seq"] in seen:
            raise InvalidInput(
                f"{LOG_PATH} 第{number}行：seq {event['seq']} 重复", extra={"path": LOG_PATH, "line": number}
            )
        seen.add(event["seq"])
        event["_line"] = number
        events.append(event)
    events.sort(key=lambda e: e["seq"])
    return events


def _log_open(*, root: Path) -> BinaryIO | None:
    """The log opened for reading (None when there is none), or InvalidInput when it is not a regular file
    inside the book, or is over ``MAX_LOG_BYTES`` — never a traceback."""
    try:
        fd, _ = regular_file_open(root / LOG_PATH, max_bytes=MAX_LOG_BYTES, root=root)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidInput(f"{LOG_PATH}：{exc.strerror or exc}", extra={"path": LOG_PATH}) from None
    return os.fdopen(fd, "rb", buffering=1 << 20)


def _log_lines(*, root: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes without the newline, whether it ended with one) of the log, one at a time;
    a line over ``MAX_EVENT_BYTES`` is refused before it is read whole."""
    fh = _log_open(root=root)
    if fh is None:
        return
    with fh:
        number = 0
        while True:
            line = fh.readline(MAX_EVENT_BYTES + 2)
            if not line:
                return
            number += 1
            ended = line.endswith(b"\n")
            if not ended and len(line) > MAX_EVENT_BYTES:
                raise InvalidInput(
                    f"{LOG_PATH} 第{number}行超过单个事件的上限 {MAX_EVENT_BYTES} 字节，拒绝读取"
                    "（本版本不再写入这样大的事件；请删去或拆分这一行）",
                    extra={"path": LOG_PATH, "line": number, "code": EVENT_TOO_LARGE, "max_bytes": MAX_EVENT_BYTES},
                )
            yield number, line[:-1] if ended else line, ended


def _event_parse(line: bytes, number: int) -> dict[str, Any]:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(
            f"{LOG_PATH} 第{number}行不是 UTF-8 文本", extra={"path": LOG_PATH, "line": number}
        ) from None
    try:
        event = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{LOG_PATH} 第{number}行不是合法的 JSON：{exc.msg}（第{exc.colno}列）",
            extra={"path": LOG_PATH, "line": number},
        ) from None
    if not isinstance(event, dict) or not isinstance(event.get("seq"), int) or not isinstance(event.get("op"), str):
        raise InvalidInput(
            f"{LOG_PATH} 第{number}行应是含整数 seq 与字符串 op 的对象", extra={"path": LOG_PATH, "line": number}
        )
    return event


def journal_attachment_read(*, root: Path, event: dict[str, Any]) -> Any:
    """The JSON data an event names in ``"file"`` (a copy the machine lost, emptied or cut short is
    rewritten from the event's ``"data"``), or InvalidInput naming the file (and the line and column of
    a JSON error, so a hand edit that broke it is easy to find)."""
    return journal_attachment_load(root=root, event=event)[0]


def journal_line_name(event: dict[str, Any]) -> str:
    """``.journal/log.jsonl 第N行`` (or, for an event read from the log's tail, its seq)."""
    line = event.get("_line")
    return f"{LOG_PATH} 第{line}行" if line is not None else f"{LOG_PATH}（seq {event.get('seq')}）"


def journal_attachment_path(*, event: dict[str, Any]) -> str:
    """The book-relative path of the file an event names, or InvalidInput when it is not one."""
    name = event.get("file")
    if not isinstance(name, str) or not name or ".." in Path(name).parts or Path(name).is_absolute():
        raise InvalidInput(
            f"{journal_line_name(event)}：file 应是 {JOURNAL_DIR}/ 下的相对路径", extra={"path": LOG_PATH}
        )
    return f"{JOURNAL_DIR}/{name}"


def journal_attachment_stat(*, root: Path, event: dict[str, Any]) -> tuple[int, int] | None:
    """(size, mtime_ns) of the file an event names, None when it is missing or not a path."""
    try:
        stat = os.stat(Path(root) / journal_attachment_path(event=event))
    except (OSError, InvalidInput):
        return None
    return stat.st_size, stat.st_mtime_ns


def journal_attachment_load(*, root: Path, event: dict[str, Any]) -> tuple[Any, tuple[str, int, int]]:
    """``journal_attachment_read`` and the file's (sha256, size, mtime_ns), recorded when it is applied."""
    relative = journal_attachment_path(event=event)
    try:
        raw, mtime_ns = regular_file_read(Path(root) / relative, max_bytes=MAX_ATTACHMENT_BYTES, root=Path(root))
    except FileNotFoundError:
        raw, mtime_ns = None, 0
    except OSError as exc:
        raise InvalidInput(f"{relative}：{exc.strerror or exc}", extra={"path": relative}) from None
    if "data" in event:
        # The copy is written without fsync: a crash of the machine may lose it, leave it empty, zeroed
        # or cut short. Then it is rewritten from the line (the durable record); a copy an author edited
        # (whole, or broken in any other way) is theirs and read as it is.
        expected = _attachment_text(event["data"]).encode("utf-8")
        if raw != expected and (raw is None or expected.startswith(raw.rstrip(b"\0"))):
            written = book_file_write(root=Path(root), relative=relative, text=expected)
            raw, mtime_ns = expected, os.stat(written).st_mtime_ns
        if raw == expected:
            return event["data"], (hashlib.sha256(raw).hexdigest(), len(raw), mtime_ns)
    if raw is None:
        raise InvalidInput(f"{journal_line_name(event)} 引用的 {relative} 不存在", extra={"path": relative})
    stamp = (hashlib.sha256(raw).hexdigest(), len(raw), mtime_ns)
    try:
        return json.loads(raw.decode("utf-8")), stamp
    except UnicodeDecodeError:
        raise InvalidInput(f"{relative} 不是 UTF-8 文本", extra={"path": relative}) from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{relative} 第{exc.lineno}行第{exc.colno}列：JSON 无效（{exc.msg}）",
            extra={"path": relative, "line": exc.lineno},
        ) from None


def journal_applied_seqs(*, book: Book) -> set[int]:
    """The seqs of ``book``'s journal whose rows are in the database."""
    return set(JournalApplied.objects.filter(book=book).values_list("seq", flat=True))


def journal_applied_mark(*, book: Book, seq: int, stamp: tuple[str, int, int] | None = None) -> None:
    """Record that the rows of event ``seq`` are written (in the transaction that wrote them), with its
    attachment's (sha256, size, mtime_ns) when it has one."""
    sha, size, mtime_ns = stamp if stamp is not None else ("", None, None)
    JournalApplied.objects.create(
        book=book, seq=seq, attachment_hash=sha, attachment_size=size, attachment_mtime_ns=mtime_ns
    )


def journal_applied_mark_many(*, book: Book, marks: list[tuple[int, tuple[str, int, int] | None]]) -> None:
    """``journal_applied_mark`` of each (seq, stamp) in one INSERT (a replay marks its events at the end)."""
    rows = []
    for seq, stamp in marks:
        sha, size, mtime_ns = stamp if stamp is not None else ("", None, None)
        rows.append(
            JournalApplied(book=book, seq=seq, attachment_hash=sha, attachment_size=size, attachment_mtime_ns=mtime_ns)
        )
    JournalApplied.objects.bulk_create(rows, batch_size=500)


def journal_applied_stamps(*, book: Book) -> dict[int, tuple[str, int | None, int | None]]:
    """seq → the (sha256, size, mtime_ns) its attachment had when applied, for the applied events with one."""
    return {
        seq: (sha, size, mtime)
        for seq, sha, size, mtime in JournalApplied.objects.filter(book=book)
        .exclude(attachment_hash="")
        .values_list("seq", "attachment_hash", "attachment_size", "attachment_mtime_ns")
    }


def journal_applied_restamp(*, book: Book, seq: int, stamp: tuple[str, int, int]) -> None:
    """The attachment of applied event ``seq`` was applied again (a hand edit): record its new stamp."""
    sha, size, mtime_ns = stamp
    JournalApplied.objects.filter(book=book, seq=seq).update(
        attachment_hash=sha, attachment_size=size, attachment_mtime_ns=mtime_ns
    )
