"""Writes of the memory app, the fact primitives: observing, revising, closing and deciding facts,
deleting them, their history; scratchpad import; the memory-hit log. Every status change goes through
``groups_resolve`` so the resolver's rules (memory/resolver.py) are applied in one place and every
change is in the history.

The after-chapter pipeline that derives, indexes and compacts (memory/pipeline.py) builds on these;
nothing here imports it (facts ← derivation / compaction / retrieval ← pipeline)."""

import datetime
import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max
from django.utils import timezone

import core.journal as core_journal
from core.journal import EVENT_TOO_LARGE, journal_append, journal_folder, journal_lock
from core.locks import book_write_lock
from core.models import Book
from entities.models import LegacyRecord
from kernel.bounds import NUMBER_MAX
from kernel.bulk import rows_insert, rows_update
from kernel.exceptions import InvalidInput
from memory.models import Fact, FactEvent, MemoryHit
from memory.resolver import fact_views, group_resolve
from recall.facts import fact_text, facts_embed_after_commit

CATEGORIES = [c.value for c in Fact.Category]
STATUSES = [s.value for s in Fact.Status]

GroupKey = tuple[str, str, str]


def fact_key_make(*, prefix: str, category: str, subject: str, field: str, number: int, value: str) -> str:
    """A stable key for a fact: the same observation always gets the same key."""
    raw = "\x1f".join([category, subject, field, str(number), value])
    return f"{prefix}-{hashlib.sha1(raw.encode('utf-8')).hexdigest()[:16]}"


def _check_category(category: str) -> None:
    if category not in CATEGORIES:
        raise InvalidInput(f"未知的事实类别 '{category}'，可选：{'、'.join(CATEGORIES)}", extra={"category": category})


# What groups_resolve reads of a fact: not its evidence or extra (JSON decoded per row, a third of the
# cost when a rebuild resolves every group of the book).
_RESOLVE_FIELDS = (
    "id",
    "key",
    "category",
    "subject",
    "field",
    "value",
    "status",
    "source_chapter",
    "confidence",
    "origin",
    "revises_id",
    "superseded_by_id",
    "closed_chapter",
    "decided_at",
)


@dataclass(frozen=True)
class StatusChange:
    """What the resolver changes on one fact of a group: its new status and successor, and the status
    event to write (None: none; a derived or setting fact's status event replaces its earlier ones)."""

    fact: Any
    status: str
    superseded_by_id: int | None
    event: dict[str, Any] | None
    replaces_events: bool


def group_changes(facts: list[Any], same: list[tuple[Any, str, str, int | None]] | None = None) -> list[StatusChange]:
    """The resolver (memory/resolver.py) run on one group's facts, as the changes to store: a pure
    function of the facts' attributes (``Fact`` rows, or the in-memory facts of a whole-book derivation,
    memory/batch.py), so both store the same statuses and history. ``same``, when given, collects the
    derived or setting facts the resolver leaves at a status other than active, as (fact, status,
    reason, the successor's chapter): their one status event may still need its note or chapter
    refreshed (``_status_events_refreshed``)."""
    by_key = {f.key: f for f in facts}
    out = []
    for key, res in group_resolve(fact_views(facts)).items():
        fact = by_key[key]
        new_sup = by_key[res.superseded_by].pk if res.superseded_by else None
        if fact.status == res.status and fact.superseded_by_id == new_sup:
            if (
                same is not None
                and fact.origin in (Fact.Origin.DERIVED, Fact.Origin.SETTING)
                and res.status != Fact.Status.ACTIVE
            ):
                chapter = by_key[res.superseded_by].source_chapter if res.superseded_by else None
                same.append((fact, res.status, res.reason, chapter))
            continue
        event = {
            "fact_id": fact.pk,
            "action": "status",
            "old_status": fact.status,
            "new_status": res.status,
            "chapter": by_key[res.superseded_by].source_chapter if res.superseded_by else None,
            "note": res.reason,
        }
        # A derived fact's history is a function of what it is derived from (a rebuild resolves it
        # once): one status event, the current one, never a path of them.
        derived = fact.origin in (Fact.Origin.DERIVED, Fact.Origin.SETTING)
        if derived:
            event["old_status"] = Fact.Status.ACTIVE
            if res.status == Fact.Status.ACTIVE:
                event = None
        elif fact.status == res.status:
            event = None
        out.append(StatusChange(fact, res.status, new_sup, event, derived))
    return out


def groups_resolve(*, book: Book, groups: Iterable[GroupKey]) -> int:
    """Re-run the resolver on these groups and store the statuses; returns how many facts changed."""
    groups = sorted(set(groups))
    if not groups:
        return 0
    by_group: dict[GroupKey, list[Fact]] = {}
    subjects = {g[1] for g in groups}
    # One query per ~500 subjects instead of one per group (derivation touches thousands of groups).
    subject_list = sorted(subjects)
    for start in range(0, len(subject_list), 500):
        rows = Fact.objects.filter(book=book, subject__in=subject_list[start : start + 500]).only(*_RESOLVE_FIELDS)
        for fact in rows:
            g = (fact.category, fact.subject, fact.field)
            by_group.setdefault(g, []).append(fact)
    events = []
    to_update = []
    stale: list[int] = []
    same: list[tuple[Fact, str, str, int | None]] = []
    wanted = set(groups)
    for g, facts in by_group.items():
        if g not in wanted:
            continue
        for change in group_changes(facts, same):
            fact = change.fact
            if change.replaces_events:
                stale.append(fact.pk)
            if change.event is not None:
                events.append(FactEvent(**change.event))
            fact.status = change.status
            fact.superseded_by_id = change.superseded_by_id
            to_update.append(fact)
    now = timezone.now()
    events += _status_events_refreshed(same, stale)
    rows_update(
        Fact,
        [
            {"pk": f.pk, "status": f.status, "superseded_by_id": f.superseded_by_id, "updated_at": now}
            for f in to_update
        ],
        ["status", "superseded_by_id", "updated_at"],
    )
    for start in range(0, len(stale), 500):
        FactEvent.objects.filter(fact_id__in=stale[start : start + 500], action="status").delete()
    events_insert(events, at=now)
    return len(to_update)


def _status_events_refreshed(same: list[tuple[Fact, str, str, int | None]], stale: list[int]) -> list[FactEvent]:
    """The status events of ``same`` (fact, status, reason, the successor's chapter) whose note or
    chapter is not the resolution's: appended to ``stale`` (their old event goes) and returned anew, so
    a derived fact's one status event is what a rebuild's single resolution writes."""
    current: dict[int, tuple[str, int | None]] = {}
    pks = [fact.pk for fact, _status, _reason, _chapter in same]
    for start in range(0, len(pks), 500):
        for pk, note, chapter in FactEvent.objects.filter(
            fact_id__in=pks[start : start + 500], action="status"
        ).values_list("fact_id", "note", "chapter"):
            current[pk] = (note, chapter)
    out = []
    for fact, status, reason, chapter in same:
        if current.get(fact.pk) != (reason, chapter):
            stale.append(fact.pk)
            out.append(
                FactEvent(
                    fact=fact,
                    action="status",
                    old_status=Fact.Status.ACTIVE,
                    new_status=status,
                    chapter=chapter,
                    note=reason,
                )
            )
    return out


def setting_facts_state(*, book: Book) -> str:
    """Count, highest id and latest change of the book's setting facts: any write to one moves it
    (every writer sets updated_at). The memory pipeline records it after its own writes (here and in
    facts_compact); a change by anyone else since makes the next derivation apply them again."""
    agg = Fact.objects.filter(book=book, origin=Fact.Origin.SETTING).aggregate(
        n=Count("id"), m=Max("id"), u=Max("updated_at")
    )
    return f"{agg['n']}:{agg['m'] or 0}:{agg['u'].isoformat() if agg['u'] else ''}"


def facts_delete(pks: list[int]) -> int:
    """Delete facts by primary key without Django's deletion collector (which loads every fact and
    its events first: seconds when compaction drops thousands). It must do by hand everything the
    collector would: every row that references a fact goes first — its events, its rows in the
    memory-hit log (``MemoryHit.facts``: a logged context pack references the facts it showed) — and
    facts that point at it (superseded_by, revises) are unlinked, as the foreign keys' SET_NULL says.
    A reference added to Fact later must be added here too (tests/hardening/test_memory_after_edit.py
    checks every relation of the model against this list)."""
    hit_links = MemoryHit.facts.through
    deleted = 0
    for start in range(0, len(pks), 500):
        part = pks[start : start + 500]
        FactEvent.objects.filter(fact_id__in=part).delete()  # no dependants: one DELETE
        hit_links.objects.filter(fact_id__in=part).delete()  # the hit log keeps its other facts
        Fact.objects.filter(superseded_by_id__in=part).update(superseded_by=None)
        Fact.objects.filter(revises_id__in=part).update(revises=None)
        with connection.cursor() as cur:
            cur.execute(f"DELETE FROM {Fact._meta.db_table} WHERE id IN ({', '.join(['%s'] * len(part))})", part)
            deleted += cur.rowcount
    return deleted


def events_insert(events: list[FactEvent], *, at: datetime.datetime) -> int:
    """Store unsaved FactEvents in one plain insert (derivation writes thousands at a time)."""
    return rows_insert(
        FactEvent,
        [
            {
                "fact_id": e.fact_id,
                "at": at,
                "action": e.action,
                "old_status": e.old_status,
                "new_status": e.new_status,
                "chapter": e.chapter,
                "note": e.note,
            }
            for e in events
        ],
    )


def _chars(value: Any) -> int:
    """The characters of every key and string in ``value``: a lower bound of its UTF-8 size in a journal
    line (a character is at least one byte), counted without encoding or serializing anything."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + _chars(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(_chars(v) for v in value)
    return 0


def _event_bound(*, book: Book, op: str, **parts: Any) -> None:
    """Refuse, before any row is built, a write whose journal event would be over the journal's cap
    (``journal_event_too_large``, as ``journal_append`` says it): a 100 MB fact value used to be built
    into its rows first, and the refusing process peaked at 1.05 GB. A book without a folder journals
    nothing and is not bounded here (as before)."""
    size, cap = sum(_chars(part) for part in parts.values()), core_journal.MAX_EVENT_BYTES
    if size > cap and journal_folder(book=book) is not None:
        raise InvalidInput(
            f"这次写入过大，无法记入书籍日志：至少 {size} 字节，单个事件上限 {cap} 字节"
            f"（{op}）。未写入任何内容；请拆小后再写",
            extra={"code": EVENT_TOO_LARGE, "op": op, "bytes": size, "max_bytes": cap},
        )


@transaction.atomic
def fact_observe(
    *,
    book: Book,
    category: str,
    subject: str,
    field: str,
    value: str,
    number: int,
    confidence: float = 1.0,
    evidence: list[dict[str, Any]] | None = None,
    origin: str = Fact.Origin.MANUAL,
    entity_ref: str = "",
    revises: Fact | None = None,
    key: str | None = None,
    journal: bool = True,
) -> Fact:
    """Record that ``subject``'s ``field`` is ``value`` as of ``number`` and resolve its group.

    Observing the same thing twice adds the evidence to the existing fact instead of duplicating it.
    Journaled (``memory.fact.observe``) unless ``journal`` is False (a replay, or fact_revise's own event)."""
    if journal:
        _event_bound(book=book, op="memory.fact.observe", texts=(subject, field, value, entity_ref), evidence=evidence)
    journal_lock(book=book, heal=journal)  # a crashed writer's event first (core/journal.py)
    _check_category(category)
    subject, field, value = subject.strip(), field.strip(), str(value).strip()
    if not subject or not field or not value:
        raise InvalidInput("事实的 subject、field、value 都不能为空", extra={"subject": subject, "field": field})
    if not 0.0 <= confidence <= 1.0:
        raise InvalidInput(f"置信度必须在 0 到 1 之间，收到 {confidence}", extra={"confidence": confidence})
    if number < 0:
        raise InvalidInput(f"章节号不能为负：{number}", extra={"chapter": number})
    key = key or fact_key_make(prefix="m", category=category, subject=subject, field=field, number=number, value=value)
    evidence = list(evidence or [])
    fact = Fact.objects.filter(book=book, key=key).first()
    if fact is None:
        fact = Fact.objects.create(
            book=book,
            key=key,
            category=category,
            subject=subject,
            field=field,
            value=value,
            source_chapter=number,
            confidence=confidence,
            evidence=evidence,
            origin=origin,
            entity_ref=entity_ref,
            revises=revises,
        )
        FactEvent.objects.create(fact=fact, action="created", new_status=fact.status, chapter=number, note=value)
        # issue 32: its vector, once committed (a revision is a new fact: only the new text is embedded)
        facts_embed_after_commit([fact_text(subject=subject, field=field, value=value)])
    else:
        new = [e for e in evidence if e not in fact.evidence]
        if new:
            fact.evidence = fact.evidence + new
            fact.confidence = max(fact.confidence, confidence)
            fact.save(update_fields=["evidence", "confidence", "updated_at"])
            FactEvent.objects.create(fact=fact, action="evidence", chapter=number, note=f"新增证据 {len(new)} 条")
    groups_resolve(book=book, groups=[(category, subject, field)])
    fact.refresh_from_db()
    if journal:
        journal_append(
            book=book,
            op="memory.fact.observe",
            key=key,
            category=category,
            subject=subject,
            field=field,
            value=value,
            chapter=number,
            confidence=confidence,
            evidence=evidence,
            origin=origin,
            entity_ref=entity_ref,
            revises=revises.key if revises is not None else None,
        )
    return fact


@transaction.atomic
def fact_revise(*, fact: Fact, value: str, number: int, reason: str = "", journal: bool = True) -> Fact:
    """Explicitly revise a fact (typically a world rule): the new fact supersedes it and links to it.
    Journaled (``memory.fact.revise``)."""
    if journal:
        _event_bound(book=fact.book, op="memory.fact.revise", texts=(value, reason))
    if journal_lock(book=fact.book, heal=journal):  # a crashed writer's event first (core/journal.py)
        fact.refresh_from_db()
    if number < fact.source_chapter:
        raise InvalidInput(
            f"修订章节（第{number}章）早于原事实的来源章节（第{fact.source_chapter}章）",
            extra={"fact": fact.key, "chapter": number},
        )
    FactEvent.objects.create(fact=fact, action="revised", chapter=number, note=reason or f"修订为：{value}")
    new = fact_observe(
        book=fact.book,
        category=fact.category,
        subject=fact.subject,
        field=fact.field,
        value=value,
        number=number,
        evidence=[{"kind": "revision", "of": fact.key, "reason": reason, "chapter": number}],
        origin=Fact.Origin.MANUAL,
        entity_ref=fact.entity_ref,
        revises=fact,
        journal=False,
    )
    if new.revises_id != fact.pk:
        new.revises = fact
        new.save(update_fields=["revises", "updated_at"])
    groups_resolve(book=fact.book, groups=[(fact.category, fact.subject, fact.field)])
    new.refresh_from_db()
    if journal:
        journal_append(
            book=fact.book, op="memory.fact.revise", fact=fact.key, value=value, chapter=number, reason=reason
        )
    return new


@transaction.atomic
def fact_close(*, fact: Fact, number: int, reason: str = "", journal: bool = True) -> Fact:
    """Close an open loop (or lift a constraint) at ``number`` by hand; later derivations keep it closed.
    Journaled (``memory.fact.close``)."""
    if journal_lock(book=fact.book, heal=journal):  # a crashed writer's event first (core/journal.py)
        fact.refresh_from_db()
    fact.closed_chapter = number
    fact.save(update_fields=["closed_chapter", "updated_at"])
    FactEvent.objects.create(fact=fact, action="author_closed", chapter=number, note=reason or f"第{number}章收尾")
    groups_resolve(book=fact.book, groups=[(fact.category, fact.subject, fact.field)])
    fact.refresh_from_db()
    if journal:
        journal_append(book=fact.book, op="memory.fact.close", fact=fact.key, chapter=number, reason=reason)
    return fact


@transaction.atomic
def fact_decide(*, fact: Fact, note: str = "", journal: bool = True) -> Fact:
    """Settle a contradiction: this fact's value wins over the other values of its chapter.
    Journaled (``memory.fact.decide``)."""
    if journal_lock(book=fact.book, heal=journal):  # a crashed writer's event first (core/journal.py)
        fact.refresh_from_db()
    if fact.status != Fact.Status.CONTRADICTED:
        raise InvalidInput(
            f"事实 {fact.key} 的状态是 {fact.get_status_display()}，只有矛盾待裁决的事实可以裁决",
            extra={"fact": fact.key, "status": fact.status},
        )
    fact.decided_at = timezone.now()
    fact.save(update_fields=["decided_at", "updated_at"])
    FactEvent.objects.create(fact=fact, action="decided", chapter=fact.source_chapter, note=note or "采纳此值")
    groups_resolve(book=fact.book, groups=[(fact.category, fact.subject, fact.field)])
    fact.refresh_from_db()
    if journal:
        journal_append(book=fact.book, op="memory.fact.decide", fact=fact.key, note=note)
    return fact


def derivation_lock(*, book: Book) -> None:
    """Queue a derivation behind every other writer of the book (core/locks.py): two hooks at once
    (two ingestions finishing together) would otherwise insert the same fact keys side by side, and a
    derivation beside a rebuild would read half-old, half-new chapters."""
    book_write_lock(book=book)


HIT_REFRESH_SECONDS = 60  # an unchanged pack's log row is rewritten at most this often


def memory_hit_record(*, book: Book, pack: dict[str, Any]) -> MemoryHit | None:
    """Log which facts and chunks went into this chapter's pack (one row per chapter and task).

    A pack identical to the logged one is not written again unless the log is over a minute old (its
    ``built_at`` then moves): a context read would otherwise be a write transaction, queued on SQLite
    behind every ingestion and finalize (the API-key check follows the same rule)."""
    included = [item for item in pack["items"] if item["included"]]
    values = {
        "budget_tokens": pack["budget_tokens"],
        "used_tokens": pack["used_tokens"],
        "mode": pack["mode"],
        "retrieval": pack.get("retrieval", ""),
        "items": [item["id"] for item in included],
        "skipped": len(pack["items"]) - len(included),
    }
    keys = sorted(item["id"].removeprefix("fact:") for item in included if item["id"].startswith("fact:"))
    hit = MemoryHit.objects.filter(book=book, chapter=pack["chapter"], task=pack["task"]).first()
    if (
        hit is not None
        and all(getattr(hit, name) == value for name, value in values.items())
        and sorted(hit.facts.values_list("key", flat=True)) == keys
        and hit.built_at > timezone.now() - datetime.timedelta(seconds=HIT_REFRESH_SECONDS)
    ):
        return hit
    for attempt in range(2):
        try:
            with transaction.atomic():
                hit, _ = MemoryHit.objects.update_or_create(
                    book=book, chapter=pack["chapter"], task=pack["task"], defaults=values
                )
                hit.facts.set(Fact.objects.filter(book=book, key__in=keys))
            return hit
        except IntegrityError:
            # A derivation deleted one of the pack's facts between our read and our insert (the log
            # does not take the book's writer lock: a read must not queue behind a rebuild). Read the
            # facts again; a second collision leaves the previous log row as it was.
            if attempt:
                return MemoryHit.objects.filter(book=book, chapter=pack["chapter"], task=pack["task"]).first()
    return hit


IMPORT_CHAPTER_MAX = NUMBER_MAX  # past this a chapter number is a typo or an attack, never a book


def _import_chapter(raw: Any, *, where: str) -> int:
    """A fact's chapter from a scratchpad file: 0 (a setting, also for a missing value) to 10,000,000."""
    if raw is None or raw == "":
        return 0
    number: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        number = raw
    elif isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        number = int(raw)
    elif isinstance(raw, str) and raw.strip().isdecimal() and len(raw.strip()) <= 9:
        number = int(raw.strip())
    if number is None or not 0 <= number <= IMPORT_CHAPTER_MAX:
        raise InvalidInput(
            f"{where} 应为 0 到 {IMPORT_CHAPTER_MAX} 的整数章节号（0 表示设定），收到 {str(raw)[:50]!r}",
            extra={"item": where, "value": str(raw)[:50]},
        )
    return number


def _import_confidence(raw: Any, *, where: str) -> float:
    """A confidence from a scratchpad file: a finite number in [0, 1]; missing means certain (1.0)."""
    if raw is None:
        return 1.0
    value: float | None = None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            value = None
    if value is None or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidInput(
            f"{where} 应为 0 到 1 之间的数，收到 {str(raw)[:50]!r}", extra={"item": where, "value": str(raw)[:50]}
        )
    return value


def _import_text_check(text: str, *, where: str, limit: int | None) -> None:
    if limit is not None and len(text) > limit:
        raise InvalidInput(f"{where} 过长：{len(text)} 个字符，上限 {limit}", extra={"item": where})
    if "\x00" in text:
        raise InvalidInput(f"{where} 含 NUL 字符", extra={"item": where})


# The old plugin's memory_scratchpad.json named its buckets its own way (character_state …): each
# maps onto one of our categories; a bucket that maps nowhere is kept verbatim and reported.
CATEGORY_ALIASES = {
    **{c: c for c in CATEGORIES},
    "character_state": "character_facts", "character_states": "character_facts", "characters": "character_facts",
    "character": "character_facts", "plot_facts": "story_facts", "facts": "story_facts", "events": "story_facts",
    "story": "story_facts", "rules": "world_rules", "world": "world_rules", "world_state": "world_rules",
    "loops": "open_loops", "open_threads": "open_loops", "foreshadowing": "open_loops", "promises": "reader_promises",
    "constraints": "active_constraints", "timeline_events": "timeline",
}  # fmt: skip
SUBJECT_KEYS = ("subject", "entity", "entity_id", "character", "character_id", "name", "who", "target")
FIELD_KEYS = ("field", "attribute", "key", "aspect", "property")
VALUE_KEYS = ("value", "content", "text", "fact", "description", "summary", "note", "state")
CHAPTER_KEYS = ("source_chapter", "chapter", "updated_chapter", "last_chapter")
ITEM_META = {"id", "category", "status", "confidence", "evidence", "updated_at", "created_at", "source", "tags"}
KEPT_KEYS = ("payload", "layer")  # issue 31: carried as written in Fact.extra, exported back
STATUS_ALIASES = {"open": "active", "current": "active", "resolved": "outdated", "closed": "outdated",
                  "stale": "outdated", "conflict": "contradicted", "uncertain": "tentative"}  # fmt: skip


def _json_storable(value: Any) -> Any:
    """``value`` as a JSON column can hold it (kept verbatim otherwise): NaN / Infinity become their
    text, NUL and lone surrogates in strings are escaped (SQLite's JSON_VALID, PostgreSQL's jsonb)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\u0000")
    if isinstance(value, list):
        return [_json_storable(v) for v in value]
    if isinstance(value, dict):
        return {str(_json_storable(k)): _json_storable(v) for k, v in value.items()}
    return value


def _first(item: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if item.get(key) not in (None, "", [], {}):
            return key, item[key]
    return None, None


def _text(value: Any) -> str:
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value if value is not None else "").strip()


def _scratchpad_facts(category: str, item: dict[str, Any], *, where: str) -> list[dict[str, Any]]:
    """One scratchpad item → [{subject, field, value, chapter, confidence, status, evidence, id}];
    ValueError (the reason, in Chinese) when it cannot be mapped. A character-state item that holds its
    fields as keys ({entity, realm, location, chapter}) gives one fact per field."""
    subject_key, subject = _first(item, SUBJECT_KEYS)
    chapter_key, chapter = _first(item, CHAPTER_KEYS)
    chapter = _import_chapter(chapter, where=f"{where}.{chapter_key or 'source_chapter'}")
    confidence = _import_confidence(item.get("confidence"), where=f"{where}.confidence")
    status = str(item.get("status") or Fact.Status.ACTIVE).strip().lower()
    status = STATUS_ALIASES.get(status, status)
    if status not in STATUSES:
        raise ValueError(f"状态 '{item.get('status')}' 无法对应（可选：{'、'.join(STATUSES)}）")
    field_key, field = _first(item, FIELD_KEYS)
    if field_key is None and item.get("field") == "" and category != Fact.Category.CHARACTER:
        field_key, field = "field", ""  # the author's empty field stays empty (it was turned into "value")
    pairs: list[tuple[str, Any]]
    if field_key is not None:
        _, value = _first(item, VALUE_KEYS)
        pairs = [(_text(field), value)]
    elif category == Fact.Category.CHARACTER:
        used = {subject_key, *CHAPTER_KEYS, *ITEM_META, *KEPT_KEYS}
        nested = item.get("state") if isinstance(item.get("state"), dict) else None
        source = nested if nested is not None else {k: v for k, v in item.items() if k not in used}
        pairs = [(str(k), v) for k, v in source.items() if v not in (None, "", [], {})]
    else:
        # a fact without a field (story facts, rules, loops): its text is the value, and without a
        # subject it stands alone (its id), so two loops never supersede each other in the resolver
        value_key, value = _first(item, VALUE_KEYS)
        pairs = [(value_key, value)] if value_key else []
        if not subject and value_key:
            digest = hashlib.sha1(_text(value).encode("utf-8")).hexdigest()[:8]
            subject = str(item.get("id") or f"{category}-{digest}")
    if not subject or not pairs or any(_text(v) == "" for _, v in pairs):
        raise ValueError("缺少 subject、field 或 value（也认 entity / attribute / content 等同义键）")
    _import_text_check(_text(subject), where=f"{where}.subject", limit=200)
    for field, value in pairs:
        _import_text_check(_text(field), where=f"{where}.field", limit=200)
        _import_text_check(_text(value), where=f"{where}.value", limit=None)
    if item.get("id") is not None:
        _import_text_check(str(item["id"]), where=f"{where}.id", limit=100)
    evidence = item.get("evidence") or []
    evidence = evidence if isinstance(evidence, list) else [evidence]
    evidence = [e if isinstance(e, dict) else {"kind": "note", "text": str(e)} for e in evidence]
    return [
        {
            "subject": _text(subject),
            "field": field[:200],
            "value": _text(value),
            "chapter": chapter,
            "confidence": confidence,
            "status": status,
            "evidence": evidence,
            "id": str(item.get("id") or "") + (f".{field}" if len(pairs) > 1 and item.get("id") else ""),
            "extra": {k: _json_storable(item[k]) for k in KEPT_KEYS if k in item},
        }
        for field, value in pairs
    ]


@transaction.atomic
def scratchpad_import(
    *, book: Book, data: dict[str, Any], replace: bool = False, journal: bool = True
) -> dict[str, Any]:
    """Import a ``.webnovel/memory_scratchpad.json``: ours, or the old plugin's (buckets such as
    ``character_state``). What maps becomes facts (same ids → updated, not duplicated); buckets and
    items that do not map are kept verbatim in the book's legacy store and reported — the file is
    never refused as a whole for them.

    The plugin's statuses are taken as given for outdated items; the others are re-resolved.
    Journaled (``memory.import``, the file's data kept beside the log) unless ``journal`` is False."""

    if not isinstance(data, dict):
        raise InvalidInput("记忆文件应为 JSON 对象：{类别: [条目…]}", extra={})
    if journal:
        _event_bound(book=book, op="memory.import", data=data)
    journal_lock(book=book, heal=journal)  # a crashed writer's event first (core/journal.py)
    buckets = data.get("buckets", data) if isinstance(data.get("buckets"), dict) else data
    if replace:
        Fact.objects.filter(book=book, origin=Fact.Origin.IMPORT).delete()
    created = updated = 0
    groups: set[GroupKey] = set()
    mapped: dict[str, str] = {}
    kept: dict[str, Any] = {}
    skipped: list[dict[str, str]] = []
    for name, items in buckets.items():
        if name == "meta":
            continue  # the export's own meta (version, updated_at, compaction_count): not memory
        category = CATEGORY_ALIASES.get(str(name).strip().lower())
        if isinstance(items, dict) and category == Fact.Category.CHARACTER:
            # {subject: {field: value}}: the state of each character keyed by its name
            items = [
                {"subject": k, **v} if isinstance(v, dict) else {"subject": k, "value": v} for k, v in items.items()
            ]
        if category is None or not isinstance(items, list):
            if isinstance(items, list | dict):
                kept[str(name)] = items  # a bucket of something we do not model
            continue  # scalars are metadata such as "version" / "updated_at"
        mapped[str(name)] = category
        unmapped = []
        for index, item in enumerate(items):
            where = f"{name}[{index}]"
            try:
                if not isinstance(item, dict):
                    raise ValueError("不是对象")
                facts = _scratchpad_facts(category, item, where=where)
            except InvalidInput as exc:  # a value out of range: the message names its path already
                skipped.append({"item": where, "reason": exc.message})
                unmapped.append(item)
                continue
            except ValueError as exc:
                skipped.append({"item": where, "reason": str(exc)})
                unmapped.append(item)
                continue
            for fact_data in facts:
                was_created = _scratchpad_fact_save(book=book, category=category, data=fact_data)
                created, updated = created + was_created, updated + (not was_created)
                groups.add((category, fact_data["subject"], fact_data["field"]))
        if unmapped:
            kept[f"{name}.unmapped"] = unmapped
    for key, value in kept.items():
        LegacyRecord.objects.update_or_create(
            book=book,
            key=f"memory_scratchpad.{key}",
            defaults={"value": _json_storable(value), "source_path": "memory_scratchpad.json"},
        )
    groups_resolve(book=book, groups=groups)
    if journal:
        journal_append(book=book, op="memory.import", attachment=("imports/memory", data), replace=replace)
    return {
        "created": created,
        "updated": updated,
        "mapped": mapped,
        "kept": sorted(kept),
        "skipped": skipped,
    }


def _scratchpad_fact_save(*, book: Book, category: str, data: dict[str, Any]) -> bool:
    """Upsert one imported fact by its plugin id (or a content key); True when it was created."""
    chapter, status, confidence = data["chapter"], data["status"], data["confidence"]
    if status == Fact.Status.TENTATIVE:
        # Our statuses are computed; a plugin-tentative item stays tentative through its confidence.
        confidence = min(confidence, 0.4)
    key = data["id"] or fact_key_make(
        prefix="i",
        category=category,
        subject=data["subject"],
        field=data["field"],
        number=chapter,
        value=data["value"],
    )
    defaults = {
        "category": category,
        "subject": data["subject"][:200],
        "field": data["field"],
        "value": data["value"],
        "source_chapter": chapter,
        "confidence": max(0.0, min(1.0, confidence)),
        "evidence": data["evidence"],
        "extra": data.get("extra") or {},
        "origin": Fact.Origin.IMPORT,
        # The plugin's explicit outdated mark is history we cannot recompute (its successor may not
        # be in the file), so it is kept as a closure at the fact's own chapter.
        "closed_chapter": chapter if status == Fact.Status.OUTDATED else None,
    }
    fact, was_created = Fact.objects.update_or_create(book=book, key=key[:100], defaults=defaults)
    if was_created:
        FactEvent.objects.create(fact=fact, action="imported", new_status=fact.status, chapter=chapter)
    return was_created
