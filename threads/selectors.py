"""Reads of threads (伏笔 / 悬念 / 感情线) and secrets (信息差), and the reports built on them.

"How long a thread has hung" and "how long a secret has accumulated" are computed here at query
time from the current chapter (the highest finalized chapter) and book.yaml's thresholds — never
stored, so they are right the moment a chapter is finalized.

- A thread's last activity is the latest chapter that opened it, advanced it (chapter front
  matter ``threads.advances``) or is cited by one of its 履历 entries. Its hang is
  ``current − last activity`` and only open threads hang. It is overdue when hang > the threshold
  of its type, or when the current chapter is past its planned end (``planned_end: 40``, or
  ``第7卷``: that volume's last chapter in book.yaml). ``thread_hangs`` is that definition, at any
  chapter; the memory health report, the context pack and the dashboard read it from there.
- A secret the reader does not know (``reader_knows`` false) has accumulated
  ``current − registered`` chapters; it is over the limit when that is > ``secret_accumulation``.
"""

import json
import threading
from collections.abc import Iterator
from typing import NamedTuple

import ahocorasick
from django.db import connection
from django.db.models import Max, QuerySet, TextField
from django.db.models.functions import Cast

from core import search
from core.models import Book, Chapter, Volume
from core.selectors import book_current_chapter, volume_get
from entities.selectors import alias_resolve
from kernel.exceptions import DomainError, InvalidInput, NotFound
from threads.models import Secret, Thread, ThreadHistoryEntry

THREAD_TYPES = tuple(Thread.Type.values)
THREAD_STATUSES = tuple(Thread.Status.values)
THREAD_STRENGTHS = tuple(Thread.Strength.values)


def _choice(name: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    if value in (None, ""):
        return None
    if value not in allowed:
        raise InvalidInput(f"未知的{name} '{value}'，可选：{'、'.join(allowed)}", extra={name: value})
    return value


# ── threads ─────────────────────────────────────────────────────────────────────────────────────


def thread_get(*, book: Book, thread_id: str) -> Thread:
    """The thread ``thread_id`` (e.g. 伏笔-031), or NotFound naming it."""
    thread = Thread.objects.filter(book=book, thread_id=thread_id).first()
    if thread is None:
        raise NotFound(f"线索 '{thread_id}' 不存在（《{book.title or book.slug}》）", extra={"thread": thread_id})
    return thread


def _thread_refs(chapters: QuerySet[Chapter], *, batch: int = 200) -> Iterator[tuple[int, list, list]]:
    """(number, opens, advances) of ``chapters`` in their order. The two JSON lists come as raw text
    and are decoded ``batch`` rows per ``json.loads``: Django's decoding of each field of each row
    was most of the time of the reads that walk every chapter."""
    rows = chapters.values_list("number", Cast("opens", TextField()), Cast("advances", TextField()))
    numbers: list[int] = []
    raw: list[str] = []

    def decoded() -> Iterator[tuple[int, list, list]]:
        lists = json.loads(f"[{','.join(raw)}]")
        for number, (opens, advances) in zip(numbers, lists, strict=True):
            yield number, opens or [], advances or []
        numbers.clear()
        raw.clear()

    for number, opens, advances in rows.iterator(chunk_size=batch):
        numbers.append(number)
        raw.append(f"[{opens or 'null'},{advances or 'null'}]")
        if len(numbers) == batch:
            yield from decoded()
    yield from decoded()


# The activity maps of the books read lately, per book: (stamp, {upto: map}). Building one decodes the
# opens / advances of every chapter that has any (on SQLite read from a partial covering index, migration
# 0016, not from the chapter rows with their bodies: what a `story` process pays once); the stamp costs one query. It is the count and highest id of the rows the map is
# read from — the rebuilder replaces those rows (delete + insert, ids never reused), never updates them —
# plus the book's build time (a test database may reuse ids after a rollback) and a generation that an
# in-place save through the ORM (the admin) bumps in this process (``activity_forget``, a signal).
_activity_cache: dict[int, tuple[tuple, dict[int | None, dict[str, int]]]] = {}
_activity_lock = threading.Lock()
_activity_generation = 0
_ACTIVITY_BOOKS = 16
_ACTIVITY_UPTOS = 16


def activity_forget(**kwargs) -> None:
    """A chapter, thread or 履历 row was saved in place: no cached activity map is trusted any more."""
    global _activity_generation
    with _activity_lock:
        _activity_generation += 1
        _activity_cache.clear()


def _activity_stamp(*, book: Book) -> tuple:
    """The version of the rows the map is read from; its last item is the current chapter (the highest
    chapter number), which ``thread_hangs`` needs anyway: one query answers both."""
    chapters, threads, history = Chapter._meta.db_table, Thread._meta.db_table, ThreadHistoryEntry._meta.db_table
    # Raw SQL: one round trip before every read of the map, cheaper than three ORM aggregates.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT built_at FROM {Book._meta.db_table} WHERE id = %s), c.n, c.m, t.n, t.m, h.n, h.m, c.top"
            f" FROM (SELECT COUNT(*) AS n, MAX(id) AS m, MAX(number) AS top FROM {chapters} WHERE book_id = %s) AS c,"
            f" (SELECT COUNT(*) AS n, MAX(id) AS m FROM {threads} WHERE book_id = %s) AS t,"
            f" (SELECT COUNT(*) AS n, MAX(x.id) AS m FROM {history} AS x JOIN {threads} AS y ON x.thread_id = y.id"
            f" WHERE y.book_id = %s) AS h",
            [book.pk] * 4,
        )
        return (_activity_generation, *cursor.fetchone())


def _activity_map(*, book: Book, upto: int | None = None) -> dict[str, int]:
    """``_activity_map_build``, cached per book until its chapters, threads or 履历 change (the stamp above).
    The map is shared: callers read it, never change it."""
    return _activity_and_current(book=book, upto=upto)[0]


def _activity_and_current(*, book: Book, upto: int | None = None) -> tuple[dict[str, int], int | None]:
    """(``_activity_map``, the current chapter)."""
    if connection.in_atomic_block:
        # Inside a transaction the rows may yet roll back (and their ids be reused): not a version to keep.
        return _activity_map_build(book=book, upto=upto), book_current_chapter(book=book)
    stamp = _activity_stamp(book=book)
    current = stamp[-1]
    entry = _activity_cache.get(book.pk)
    if entry is not None and entry[0] == stamp and upto in entry[1]:
        return entry[1][upto], current
    built = _activity_map_build(book=book, upto=upto)
    with _activity_lock:
        if stamp[0] != _activity_generation:
            return built, current  # forgotten while building: do not keep it
        entry = _activity_cache.get(book.pk)
        if entry is None or entry[0] != stamp:
            if len(_activity_cache) >= _ACTIVITY_BOOKS:
                _activity_cache.pop(next(iter(_activity_cache)))
            entry = _activity_cache[book.pk] = (stamp, {})
        if len(entry[1]) >= _ACTIVITY_UPTOS:
            entry[1].pop(next(iter(entry[1])))
        entry[1][upto] = built
    return built, current


def _activity_map_build(*, book: Book, upto: int | None = None) -> dict[str, int]:
    """thread id → the latest chapter (≤ ``upto`` when given) that opened or advanced it, or that
    its 履历 cites."""
    if connection.vendor == "sqlite":
        return _activity_map_sql(book=book, upto=upto)
    return _activity_map_orm(book=book, upto=upto)


# ``_activity_map_orm`` as one statement, for SQLite: the three ORM queries and the decoding of every opens /
# advances list in Python were most of a `story thread-overdue` process's own work (~6 of its ~20 ms at 3,000
# chapters); SQLite's json_each reads the lists from the partial covering index of migration 0016. Same rule:
# the thread's opened_chapter when it has one, raised by any later chapter that cites it; without one, the
# latest citing chapter when it is past 0. The parser stores opens / advances as lists of strings.
_REFS_WHERE = " WHERE c.book_id = %s AND (c.opens != '[]' OR c.advances != '[]'){upto}"
_MAP_SQL = (
    "SELECT tid, MAX(ch), MAX(o) FROM ("
    f"SELECT thread_id AS tid, opened_chapter AS ch, 1 AS o FROM {Thread._meta.db_table}"
    " WHERE book_id = %s AND opened_chapter IS NOT NULL{opened_upto}"
    f" UNION ALL SELECT j.value, c.number, 0 FROM {Chapter._meta.db_table} AS c, json_each(c.opens) AS j"
    + _REFS_WHERE
    + f" UNION ALL SELECT j.value, c.number, 0 FROM {Chapter._meta.db_table} AS c, json_each(c.advances) AS j"
    + _REFS_WHERE
    + f" UNION ALL SELECT y.thread_id, x.chapter, 0 FROM {ThreadHistoryEntry._meta.db_table} AS x"
    f" JOIN {Thread._meta.db_table} AS y ON x.thread_id = y.id"
    " WHERE y.book_id = %s AND x.chapter IS NOT NULL{history_upto}"
    ") GROUP BY tid"
)


def _activity_map_sql(*, book: Book, upto: int | None = None) -> dict[str, int]:
    """``_activity_map_orm`` in one SQLite statement (``_MAP_SQL``)."""
    if upto is None:
        sql, params = _MAP_SQL.format(opened_upto="", upto="", history_upto=""), [book.pk] * 4
    else:
        sql = _MAP_SQL.format(
            opened_upto=" AND opened_chapter <= %s", upto=" AND c.number <= %s", history_upto=" AND x.chapter <= %s"
        )
        params = [book.pk, upto] * 4
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {tid: chapter for tid, chapter, opened in cursor.fetchall() if opened or chapter > 0}


def _activity_map_orm(*, book: Book, upto: int | None = None) -> dict[str, int]:
    """``_activity_map_build`` through the ORM (any database)."""
    last: dict[str, int] = {}
    opened = Thread.objects.filter(book=book, opened_chapter__isnull=False)
    chapters = Chapter.objects.filter(book=book)
    history = ThreadHistoryEntry.objects.filter(thread__book=book, chapter__isnull=False)
    if upto is not None:
        opened = opened.filter(opened_chapter__lte=upto)
        chapters = chapters.filter(number__lte=upto)
        history = history.filter(chapter__lte=upto)
    for thread_id, chapter in opened.values_list("thread_id", "opened_chapter"):
        last[thread_id] = chapter
    # Only chapters that open or advance something (decoding every chapter's JSON is the cost here).
    for number, opens, advances in _chapters_with_refs(book=book, chapters=chapters, upto=upto):
        for thread_id in (*opens, *advances):
            if number > last.get(thread_id, 0):
                last[thread_id] = number
    for thread_id, chapter in (
        history.values_list("thread__thread_id").annotate(m=Max("chapter")).values_list("thread__thread_id", "m")
    ):
        if chapter > last.get(thread_id, 0):
            last[thread_id] = chapter
    return last


# The chapters that open or advance a thread, as SQLite reads them from the partial covering index of
# migration 0016 (never the chapter rows, each of which holds its body). The condition must be the index's.
_REFS_SQL = (
    f"SELECT number, opens, advances FROM {Chapter._meta.db_table}"
    " WHERE book_id = %s AND (opens != '[]' OR advances != '[]')"
)


def _chapters_with_refs(
    *, book: Book, chapters: QuerySet[Chapter], upto: int | None
) -> Iterator[tuple[int, list, list]]:
    """(number, opens, advances) of ``chapters`` (the book's, ≤ ``upto``) that open or advance something.
    A list that is empty in another spelling is only decoded for nothing."""
    if connection.vendor != "sqlite":
        yield from _thread_refs(chapters.exclude(opens=[], advances=[]))
        return
    with connection.cursor() as cursor:
        cursor.execute(
            _REFS_SQL + ("" if upto is None else " AND number <= %s"), [book.pk, *([] if upto is None else [upto])]
        )
        rows = cursor.fetchall()
    lists = json.loads("[" + ",".join(f"[{o or 'null'},{a or 'null'}]" for _, o, a in rows) + "]")
    for (number, _, _), (opens, advances) in zip(rows, lists, strict=True):
        yield number, opens or [], advances or []


def _last_activity(*, book: Book, thread: Thread) -> int | None:
    """One thread's last activity (same rule as ``_activity_map``, up to the current chapter)
    without reading every chapter: walk chapters from the newest down and stop at the first that
    opens or advances it, or at the latest chapter already known from the thread file and its 履历."""
    known = thread.history.filter(chapter__isnull=False).aggregate(m=Max("chapter"))["m"]
    floor = max((c for c in (thread.opened_chapter, known) if c is not None), default=None)
    chapters = Chapter.objects.filter(book=book).exclude(opens=[], advances=[])
    if floor is not None:
        chapters = chapters.filter(number__gt=floor)
    for number, opens, advances in _thread_refs(chapters.order_by("-number")):
        if thread.thread_id in opens or thread.thread_id in advances:
            return number
    return floor


class _ThreadFields(NamedTuple):
    """The fields of a thread that its hang row reads (``thread_hangs`` loads these alone)."""

    thread_id: str
    type: str
    title: str
    strength: str
    status: str
    opened_chapter: int | None
    planned_end: int | None
    planned_end_volume: int | None
    closed_chapter: int | None

    @property
    def planned_end_label(self) -> str:
        return Thread.planned_end_label.fget(self)


_VOLUME_ENDS_SQL = f"SELECT number, end_chapter FROM {Volume._meta.db_table} WHERE book_id = %s"
_VOLUME_LAST_SQL = (
    f"SELECT volume, MAX(number) FROM {Chapter._meta.db_table}"
    " WHERE book_id = %s AND volume IS NOT NULL GROUP BY volume"
)


def _volume_ends(*, book: Book) -> dict[int, int | None]:
    """volume → its last chapter: book.yaml's range, else (a volume known from its folder) its last
    finalized chapter once a later volume has begun; None while it may still grow."""
    # Plain SQL, the ORM's own statements: building them was most of the cost (thread_hangs reads this once
    # per call, a `story` process once). No ORDER BY: the model's ordering starts with the book's slug, a join.
    with connection.cursor() as cursor:
        cursor.execute(_VOLUME_ENDS_SQL, [book.pk])
        ends = dict(cursor.fetchall())
        if any(end is None for end in ends.values()):
            cursor.execute(_VOLUME_LAST_SQL, [book.pk])
            last = dict(cursor.fetchall())
        else:
            last = None
    if last is not None:
        newest = max(last, default=None)
        for number, end in ends.items():
            if end is None and number in last and number < newest:
                ends[number] = last[number]
    return ends


def _planned_end_resolve(thread: Thread | _ThreadFields, volume_ends: dict[int, int | None]) -> tuple[int | None, str]:
    """(the chapter a thread is planned to close by, a note when it cannot be known). ``planned_end:
    第7卷`` is the last chapter of volume 7 in book.yaml; a volume book.yaml does not give a chapter
    range yet is not written: no chapter, so never overdue by its plan."""
    if thread.planned_end is not None:
        return thread.planned_end, ""
    volume = thread.planned_end_volume
    if volume is None:
        return None, ""
    if volume not in volume_ends:
        return None, f"计划收尾于第{volume}卷，该卷尚未写到（book.yaml 没有它的章节范围），不计超期"
    end = volume_ends[volume]
    if end is None:
        return None, f"计划收尾于第{volume}卷，该卷尚未写完（book.yaml 没有它的章节范围），不计超期"
    return end, ""


def _open_at(thread: Thread | _ThreadFields, now: int, current: int | None) -> bool:
    # Open at chapter ``now``: opened by then, and still 进行 — or, looking back (now < current),
    # closed (已收尾) only after it. At the current chapter the status alone decides.
    if thread.opened_chapter is not None and thread.opened_chapter > now:
        return False
    if thread.status == Thread.Status.OPEN:
        return True
    looking_back = current is not None and now < current
    return (
        looking_back
        and thread.status == Thread.Status.CLOSED
        and thread.closed_chapter is not None
        and thread.closed_chapter > now
    )


def _hang_row(
    thread: Thread | _ThreadFields,
    *,
    book: Book,
    last_activity: int | None,
    now: int | None,
    current: int | None,
    volume_ends: dict[int, int | None],
) -> dict:
    """The one definition of how long a thread has hung at chapter ``now`` and whether it is overdue.

    hang = now − last activity (seed 002 §1.2: 当前最大章号 − 最后推进章), for a thread open at
    ``now`` (None otherwise, or when nothing is finalized); overdue when hang > the threshold of its
    type (book.yaml ``thresholds``), or when ``now`` is past its planned end (a chapter, or the last
    chapter of a planned volume)."""
    threshold = book.threshold(thread.type)
    planned_chapter, planned_note = _planned_end_resolve(thread, volume_ends)
    hang = None
    if now is not None and last_activity is not None and _open_at(thread, now, current):
        hang = max(0, now - last_activity)
    hung_too_long = hang is not None and hang > threshold
    past_plan = hang is not None and planned_chapter is not None and now > planned_chapter
    reasons = []
    if past_plan:
        reasons.append(f"已超过计划收尾章（第{planned_chapter}章）")
    if hung_too_long:
        reasons.append(f"已悬置 {hang} 章（最后推进于第{last_activity}章），超过阈值 {threshold}")
    return {
        **_thread_row(thread),
        "planned_end_chapter": planned_chapter,
        "planned_end_note": planned_note,
        "last_activity_chapter": last_activity,
        "hang": hang,
        "threshold": threshold,
        "past_planned_end": past_plan,
        "overdue": hung_too_long or past_plan,
        "overdue_reason": "；".join(reasons),
    }


# The threads ``thread_hangs`` reads, as plain rows (a long book has hundreds of open threads, and a row needs
# none of the prose) in plain SQL (building the ORM's statement cost more than running it).
_HANG_THREADS_SQL = (
    f"SELECT {', '.join(_ThreadFields._fields)} FROM {Thread._meta.db_table}"
    " WHERE book_id = %s AND status IN ({statuses}) ORDER BY type, thread_id"
)


def thread_hangs(*, book: Book, as_of: int | None = None) -> dict:
    """How long every thread open at chapter ``as_of`` (default: the current chapter) has hung, and
    whether it is overdue — the one definition every reader uses (threads, the memory health report,
    the context pack, the dashboard): ``{"as_of", "current_chapter", "threads": {thread id: row}}``,
    rows in (type, id) order, each ``_thread_row`` + ``planned_end_chapter``, ``planned_end_note``,
    ``last_activity_chapter``, ``hang``, ``threshold``, ``past_planned_end``, ``overdue``,
    ``overdue_reason``. Only what happened by ``as_of`` counts."""
    if as_of is not None and as_of < 0:
        raise InvalidInput(f"as_of 必须是非负整数章节号（收到 {as_of}）", extra={"as_of": as_of})
    activity, current = _activity_and_current(book=book, upto=as_of)
    now = as_of if as_of is not None else current
    volume_ends = _volume_ends(book=book)
    # At the current chapter only the open threads can hang; looking back, a thread closed since may have.
    statuses = (
        [Thread.Status.OPEN]
        if now is None or current is None or now >= current
        else [Thread.Status.OPEN, Thread.Status.CLOSED]
    )
    with connection.cursor() as cursor:
        cursor.execute(_HANG_THREADS_SQL.format(statuses=", ".join(["%s"] * len(statuses))), [book.pk, *statuses])
        fetched = cursor.fetchall()
    rows = {}
    for values in fetched:
        thread = _ThreadFields._make(values)
        if now is not None and not _open_at(thread, now, current):
            continue
        rows[thread.thread_id] = _hang_row(
            thread,
            book=book,
            last_activity=activity.get(thread.thread_id),
            now=now,
            current=current,
            volume_ends=volume_ends,
        )
    return {"as_of": now, "current_chapter": current, "threads": rows}


def thread_hangs_overdue(*, book: Book, as_of: int | None = None) -> dict:
    """``thread_hangs`` (same arguments) keeping only the overdue threads, as a list in (type, id)
    order: ``{"as_of", "current_chapter", "threads": [row, …]}`` — the one test of "overdue" that
    threads/overdue, reports/overdue and the memory health report share."""
    hangs = thread_hangs(book=book, as_of=as_of)
    return {**hangs, "threads": [row for row in hangs["threads"].values() if row["overdue"]]}


def thread_hang_limit(*, last_activity: int | None, threshold: int) -> int | None:
    """The last chapter a thread last active at ``last_activity`` may reach before its hang passes
    ``threshold`` (``_hang_row``: overdue when hang > threshold); None without a known activity."""
    return last_activity + threshold if last_activity else None


def _thread_row(thread: Thread | _ThreadFields) -> dict:
    return {
        "id": thread.thread_id,
        "type": thread.type,
        "title": thread.title,
        "strength": thread.strength,
        "status": thread.status,
        "opened_chapter": thread.opened_chapter,
        "planned_end": thread.planned_end,
        "planned_end_volume": thread.planned_end_volume,
        # issue 31: the one field that says what the author wrote (第40章 / 第7卷), whichever it was
        "planned_end_written": thread.planned_end_label or None,
        "closed_chapter": thread.closed_chapter,
    }


def thread_basics(*, book: Book, thread_id: str) -> dict:
    """A thread's basics plus its hang computed now (``thread_hangs``' definition): ``{"id", "type",
    "title", "strength", "status", "opened_chapter", "planned_end", "planned_end_volume",
    "closed_chapter", "planned_end_chapter", "planned_end_note", "last_activity_chapter",
    "current_chapter", "hang", "threshold", "past_planned_end", "overdue", "overdue_reason"}``."""
    thread = thread_get(book=book, thread_id=thread_id)
    current = book_current_chapter(book=book)
    last = _last_activity(book=book, thread=thread)
    row = _hang_row(
        thread, book=book, last_activity=last, now=current, current=current, volume_ends=_volume_ends(book=book)
    )
    row["current_chapter"] = current
    return row


def thread_history(*, book: Book, thread_id: str) -> dict:
    """A thread's 履历 in chapter order: ``{"id", "title", "entries": [{"chapter", "text"}]}``."""
    thread = thread_get(book=book, thread_id=thread_id)
    entries = thread.history.order_by("chapter", "order").values_list("chapter", "text")
    return {
        "id": thread.thread_id,
        "title": thread.title,
        "entries": [{"chapter": chapter, "text": text} for chapter, text in entries],
    }


def thread_closing_plan(*, book: Book, thread_id: str) -> str:
    """A thread's ``## 收尾计划`` section ('' when it has none)."""
    return thread_get(book=book, thread_id=thread_id).closing_plan


def thread_description(*, book: Book, thread_id: str) -> str:
    """A thread's ``## 描述`` section ('' when it has none)."""
    return thread_get(book=book, thread_id=thread_id).description


def thread_list_open_with_hang(*, book: Book) -> dict:
    """Every open (进行) thread with how long it has hung now (``thread_hangs``), in (type, id)
    order: ``{"current_chapter", "threads": [row, …]}``. ``hang`` is None when there is no finalized
    chapter or no known activity."""
    hangs = thread_hangs(book=book)
    return {"current_chapter": hangs["current_chapter"], "threads": list(hangs["threads"].values())}


_OVERDUE_KEYS = (
    "id",
    "type",
    "title",
    "strength",
    "last_activity_chapter",
    "hang",
    "threshold",
    "planned_end_chapter",
    "past_planned_end",
    "overdue_reason",
)


def _overdue_rows(*, book: Book) -> tuple[int | None, list[dict]]:
    overdue = thread_hangs_overdue(book=book)
    rows = [
        {**{k: row[k] for k in _OVERDUE_KEYS}, "over_by": row["hang"] - row["threshold"]} for row in overdue["threads"]
    ]
    rows.sort(key=lambda r: (-r["over_by"], r["id"]))
    return overdue["current_chapter"], rows


def thread_list_overdue(*, book: Book) -> dict:
    """Open threads that have hung longer than their type's threshold or are past their planned
    end (``thread_hangs``), most overdue first: ``{"current_chapter", "threads": [{"id", "type",
    "title", "strength", "last_activity_chapter", "hang", "threshold", "planned_end_chapter",
    "past_planned_end", "overdue_reason", "over_by"}]}`` (``over_by`` = hang − threshold)."""
    current, rows = _overdue_rows(book=book)
    return {"current_chapter": current, "threads": rows}


def thread_list(*, book: Book, type: str, status: str | None = None) -> list[dict]:
    """Threads of one type (伏笔 / 悬念 / 感情线), optionally with one status, in id order."""
    if not type:
        raise InvalidInput("缺少参数 type（伏笔 / 悬念 / 感情线）", extra={"type": type})
    _choice("type", type, THREAD_TYPES)
    rows = Thread.objects.filter(book=book, type=type)
    if _choice("status", status, THREAD_STATUSES):
        rows = rows.filter(status=status)
    return [_thread_row(t) for t in rows.order_by("thread_id")]


def thread_list_by_strength(*, book: Book, strength: str, status: str | None = None) -> list[dict]:
    """Threads of one strength (高 / 中 / 低), optionally with one status, in id order."""
    if not strength:
        raise InvalidInput("缺少参数 strength（高 / 中 / 低）", extra={"strength": strength})
    _choice("strength", strength, THREAD_STRENGTHS)
    rows = Thread.objects.filter(book=book, strength=strength)
    if _choice("status", status, THREAD_STATUSES):
        rows = rows.filter(status=status)
    return [_thread_row(t) for t in rows.order_by("thread_id")]


# ── secrets ─────────────────────────────────────────────────────────────────────────────────────


def secret_get(*, book: Book, secret_id: str) -> Secret:
    """The secret ``secret_id`` (e.g. 信息差-001), or NotFound naming it."""
    secret = Secret.objects.filter(book=book, secret_id=secret_id).first()
    if secret is None:
        raise NotFound(f"信息差 '{secret_id}' 不存在（《{book.title or book.slug}》）", extra={"secret": secret_id})
    return secret


def secret_known_to(*, secret: Secret) -> list[dict]:
    """Who knows ``secret``: its ``known_to`` normalized to ``[{"name", "since"}]`` (a plain name: since the registered chapter)."""
    out = []
    for item in secret.known_to or ():
        if isinstance(item, str):
            out.append({"name": item, "since": secret.registered_chapter})
        elif isinstance(item, dict) and item.get("name"):
            since = item.get("since")
            out.append({"name": str(item["name"]), "since": since if since is not None else secret.registered_chapter})
    return out


def secret_basics(*, book: Book, secret_id: str) -> dict:
    """``{"id", "title", "known_to": [{"name", "since"}], "reader_knows", "reader_told_chapter",
    "registered_chapter", "keywords"}``."""
    secret = secret_get(book=book, secret_id=secret_id)
    return {
        "id": secret.secret_id,
        "title": secret.title,
        "known_to": secret_known_to(secret=secret),
        "reader_knows": secret.reader_knows,
        "reader_told_chapter": secret.reader_told_chapter,
        "registered_chapter": secret.registered_chapter,
        "keywords": list(secret.keywords or ()),
    }


def secret_content(*, book: Book, secret_id: str) -> str:
    """The secret itself (the body of its file)."""
    return secret_get(book=book, secret_id=secret_id).content


def _accumulation_rows(*, book: Book) -> tuple[int | None, int, list[dict]]:
    current = book_current_chapter(book=book)
    threshold = book.threshold("secret_accumulation")
    rows = []
    for secret in Secret.objects.filter(book=book, reader_knows=False).order_by("secret_id"):
        registered = secret.registered_chapter
        accumulated = max(0, current - registered) if current is not None and registered is not None else None
        rows.append(
            {
                "id": secret.secret_id,
                "title": secret.title,
                "registered_chapter": registered,
                "accumulated": accumulated,
                "over_limit": accumulated is not None and accumulated > threshold,
            }
        )
    return current, threshold, rows


def secret_list_unknown(*, book: Book) -> dict:
    """Secrets the reader does not know, in id order, with the chapters each has accumulated:
    ``{"current_chapter", "threshold", "secrets": [{"id", "title", "registered_chapter",
    "accumulated", "over_limit"}]}``."""
    current, threshold, rows = _accumulation_rows(book=book)
    return {"current_chapter": current, "threshold": threshold, "secrets": rows}


# ── reports ─────────────────────────────────────────────────────────────────────────────────────


def report_overdue(*, book: Book) -> dict:
    """Overdue threads grouped by type (every type listed, even when none is overdue):
    ``{"current_chapter", "total", "types": [{"type", "threshold", "count", "threads": […]}]}``."""
    current, rows = _overdue_rows(book=book)
    types = []
    for kind in THREAD_TYPES:
        picked = [r for r in rows if r["type"] == kind]
        types.append({"type": kind, "threshold": book.threshold(kind), "count": len(picked), "threads": picked})
    return {"current_chapter": current, "total": len(rows), "types": types}


def report_secret_accumulation(*, book: Book) -> dict:
    """Secrets the reader does not know, longest-accumulated first, and those over the limit:
    ``{"current_chapter", "threshold", "unknown", "over_limit": [ids], "secrets": […]}``."""
    current, threshold, rows = _accumulation_rows(book=book)
    rows.sort(key=lambda r: (-(r["accumulated"] or 0), r["id"]))
    return {
        "current_chapter": current,
        "threshold": threshold,
        "unknown": len(rows),
        "over_limit": [r["id"] for r in rows if r["over_limit"]],
        "secrets": rows,
    }


def report_thread_activity(*, book: Book, volume: int) -> dict:
    """Thread activity inside a volume's chapter range: which threads were opened, advanced
    (chapter front matter or 履历) and closed, each with its chapters:
    ``{"volume", "start_chapter", "end_chapter", "opened": [{"id", "title", "chapters"}],
    "advanced": […], "closed": […]}``."""
    vol: Volume = volume_get(book=book, number=volume)
    chapters = Chapter.objects.filter(book=book)
    if vol.start_chapter is not None and vol.end_chapter is not None:
        chapters = chapters.filter(number__gte=vol.start_chapter, number__lte=vol.end_chapter)
        start, end = vol.start_chapter, vol.end_chapter
    else:
        chapters = chapters.filter(volume=volume)
        numbers = list(chapters.values_list("number", flat=True))
        start, end = (min(numbers), max(numbers)) if numbers else (None, None)
    events: dict[str, dict[str, set[int]]] = {"opened": {}, "advanced": {}, "closed": {}}
    for number, opens, advances, closes in chapters.values_list("number", "opens", "advances", "closes"):
        for key, ids in (("opened", opens), ("advanced", advances), ("closed", closes)):
            for thread_id in ids or ():
                events[key].setdefault(thread_id, set()).add(number)
    threads = {t.thread_id: t for t in Thread.objects.filter(book=book)}
    if start is not None:
        for thread in threads.values():
            for key, chapter in (("opened", thread.opened_chapter), ("closed", thread.closed_chapter)):
                if chapter is not None and start <= chapter <= end:
                    events[key].setdefault(thread.thread_id, set()).add(chapter)
        history = ThreadHistoryEntry.objects.filter(thread__book=book, chapter__gte=start, chapter__lte=end)
        for thread_id, chapter in history.values_list("thread__thread_id", "chapter"):
            events["advanced"].setdefault(thread_id, set()).add(chapter)

    def listing(found: dict[str, set[int]]) -> list[dict]:
        return [
            {"id": tid, "title": threads[tid].title if tid in threads else "", "chapters": sorted(found[tid])}
            for tid in sorted(found)
        ]

    return {
        "volume": volume,
        "start_chapter": start,
        "end_chapter": end,
        "opened": listing(events["opened"]),
        "advanced": listing(events["advanced"]),
        "closed": listing(events["closed"]),
    }


def _canonical(*, book: Book, name: str, cache: dict[str, str]) -> str:
    if name not in cache:
        try:
            cache[name] = alias_resolve(book=book, alias=name, type="角色").canonical_name
        except DomainError:
            cache[name] = name  # unknown or ambiguous: compare the name as written
    return cache[name]


def _leak_reasons(
    *, secret: Secret, knowers: dict[str, int | None], number: int, pov: tuple[str, str] | None
) -> list[str]:
    """Why a keyword of ``secret`` in ``number`` is a leak ([]: it is not)."""
    reasons = []
    told = secret.reader_told_chapter
    if (told is None and not secret.reader_knows) or (told is not None and number < told):
        reasons.append("reader_not_told")
    if pov is not None:
        who = pov[1]
        if who not in knowers or (knowers[who] is not None and number < knowers[who]):
            reasons.append("pov_unaware")
    return reasons


LEAK_DEFAULT_LIMIT = 200
LEAK_MAX_LIMIT = 2000


def leak_scan(*, book: Book, secret: str | None = None, limit: int = LEAK_DEFAULT_LIMIT) -> dict:
    """Chapters where a secret's keywords appear too early: before the reader is told
    (``reader_not_told``: no ``reader_told`` chapter yet, or a chapter before it), or in a chapter
    whose point-of-view character does not (yet) know the secret (``pov_unaware``). Names are
    compared canonically (aliases resolved). One row per (secret, chapter), in chapter order, at most
    ``limit``: ``{"secrets_scanned", "total", "leaks": [{"secret", "chapter", "perspective",
    "reasons", "keywords", "lines", "context"}]}`` (``context``: the first offending line).

    One pass: an Aho–Corasick automaton of every secret's keywords (case-folded) reads each chapter
    body once, instead of one index query per keyword; the lines are found in the bodies at hand."""
    if limit < 1 or limit > LEAK_MAX_LIMIT:
        raise InvalidInput(f"limit 必须在 1 到 {LEAK_MAX_LIMIT} 之间（收到 {limit}）", extra={"limit": limit})
    secrets = Secret.objects.filter(book=book).order_by("secret_id")
    if secret:
        secrets = [secret_get(book=book, secret_id=secret)]
    secrets = list(secrets)
    cache: dict[str, str] = {}
    rules = []  # (secret, knowers, [(keyword, case-folded)]) of the secrets that have keywords
    for item in secrets:
        knowers: dict[str, int | None] = {}
        for known in secret_known_to(secret=item):
            name = _canonical(book=book, name=known["name"], cache=cache)
            since = known["since"]
            if name not in knowers or (since or 0) < (knowers[name] or 0):
                knowers[name] = since
        keywords = [k for k in dict.fromkeys(str(k) for k in item.keywords or ()) if k.strip()]
        if keywords:
            rules.append((item, knowers, [(k, k.casefold()) for k in keywords]))
    if not rules:
        return {"secrets_scanned": len(secrets), "total": 0, "leaks": []}
    automaton = ahocorasick.Automaton()
    rules_of: dict[str, set[int]] = {}  # case-folded keyword → the rules (secrets) it belongs to
    for index, (_, _, keywords) in enumerate(rules):
        for _, folded in keywords:
            automaton.add_word(folded, folded)
            rules_of.setdefault(folded, set()).add(index)
    automaton.make_automaton()
    total = 0
    leaks = []
    chapters = Chapter.objects.filter(book=book).order_by("number").values_list("number", "perspective", "body")
    for number, perspective, body in chapters.iterator(chunk_size=200):
        present = {found for _, found in automaton.iter(body.casefold())}
        if not present:
            continue
        written = (perspective or "").strip()
        pov = (written, _canonical(book=book, name=written, cache=cache)) if written else None
        for index in sorted(set().union(*(rules_of[k] for k in present))):  # secret id order
            item, knowers, keywords = rules[index]
            hit = [k for k, folded in keywords if folded in present]
            reasons = _leak_reasons(secret=item, knowers=knowers, number=number, pov=pov)
            if not reasons:
                continue
            total += 1
            if len(leaks) < limit:
                leaks.append(_leak_row(secret=item, number=number, pov=pov, reasons=reasons, keywords=hit, body=body))
    return {"secrets_scanned": len(secrets), "total": total, "leaks": leaks}


def _leak_row(
    *, secret: Secret, number: int, pov: tuple[str, str] | None, reasons: list[str], keywords: list[str], body: str
) -> dict:
    folded = [k.casefold() for k in keywords]
    hits = [(line, text) for line, text in search.body_lines(body) if any(k in text.casefold() for k in folded)]
    text = hits[0][1] if hits else ""
    keyword = next((k for k in keywords if k.casefold() in text.casefold()), keywords[0])
    at = max(0, text.casefold().find(keyword.casefold()))
    return {
        "secret": secret.secret_id,
        "chapter": number,
        "perspective": pov[0] if pov else None,
        "reasons": reasons,
        "keywords": keywords,
        "lines": [line for line, _ in hits],
        "context": search.context_snippet(text, at, at + len(keyword)),
    }
