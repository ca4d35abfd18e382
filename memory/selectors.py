"""Reads of the memory app: facts (as stored or as of a chapter), the working-layer inputs of a pack
(outline section, recent chapters, who is on stage, pacing), the health report, and the export."""

import re
from collections import defaultdict
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import Count, Max

from core.models import Book, Chapter, Document, TimelineRow, Volume
from core.selectors import book_current_chapter
from entities.models import Appearance, Entity
from entities.selectors import entity_states_as_of
from kernel.exceptions import InvalidInput, NotFound
from memory.bounds import FACT_LIST_MAX
from memory.models import Fact, FactTombstone, MemoryHit
from memory.resolver import fact_views, group_resolve
from memory.retrieval import name_index
from threads.models import Thread
from threads.selectors import thread_hangs_overdue

RECENT_CHAPTERS = 5
TAIL_CHARS = 300
MAX_ON_STAGE = 8

_RANGE = re.compile(r"第\s*(\d+)\s*(?:[-–—~～至到]\s*(?:第\s*)?(\d+)\s*)?章")


# --- facts ---------------------------------------------------------------------------------------


def fact_to_dict(fact: Fact) -> dict[str, Any]:
    """A fact in the plugin's item shape, plus our own fields."""
    return {
        "id": fact.key,
        "category": fact.category,
        "subject": fact.subject,
        "field": fact.field,
        "value": fact.value,
        "status": fact.status,
        "source_chapter": fact.source_chapter,
        "evidence": fact.evidence,
        "confidence": fact.confidence,
        "updated_at": fact.updated_at.isoformat() if fact.updated_at else None,
        "origin": fact.origin,
        "entity": fact.entity_ref or None,
        "superseded_by": fact.superseded_by.key if fact.superseded_by_id else None,
        "revises": fact.revises.key if fact.revises_id else None,
        "closed_chapter": fact.closed_chapter,
    }


def fact_list(
    *,
    book: Book,
    category: str | None = None,
    status: str | None = None,
    subject: str | None = None,
    chapter: int | None = None,
    limit: int = 200,
) -> list[dict[str, Any]]:
    """Stored facts, filtered (``chapter``: only facts established at or before it)."""
    if not 1 <= limit <= FACT_LIST_MAX:
        raise InvalidInput(f"limit 必须在 1 到 {FACT_LIST_MAX} 之间，收到 {limit}", extra={"limit": limit})
    rows = Fact.objects.filter(book=book).select_related("superseded_by", "revises")
    if category:
        if category not in Fact.Category.values:
            raise InvalidInput(f"未知的事实类别 '{category}'", extra={"category": category})
        rows = rows.filter(category=category)
    if status:
        if status not in Fact.Status.values:
            raise InvalidInput(f"未知的事实状态 '{status}'", extra={"status": status})
        rows = rows.filter(status=status)
    if subject:
        rows = rows.filter(subject=subject)
    if chapter is not None:
        rows = rows.filter(source_chapter__lte=chapter)
    return [fact_to_dict(f) for f in rows.order_by("category", "subject", "field", "source_chapter", "key")[:limit]]


def fact_get(*, book: Book, key: str) -> Fact:
    """The fact ``key`` of ``book`` (NotFound names the book and the key)."""
    fact = Fact.objects.filter(book=book, key=key).first()
    if fact is None:
        raise NotFound(f"《{book.title or book.slug}》中没有 key 为 '{key}' 的记忆事实", extra={"key": key})
    return fact


def memory_fact(*, book: Book, key: str) -> dict[str, Any]:
    """One fact with its history and the values of its group."""
    return fact_history(fact=fact_get(book=book, key=key))


def fact_history(*, fact: Fact) -> dict[str, Any]:
    """A fact with its event log and the chain of values of its group (oldest first)."""
    group = Fact.objects.filter(
        book=fact.book, category=fact.category, subject=fact.subject, field=fact.field
    ).order_by("source_chapter", "key")
    return {
        "fact": fact_to_dict(fact),
        "events": [
            {
                "at": e.at.isoformat(),
                "action": e.action,
                "old_status": e.old_status,
                "new_status": e.new_status,
                "chapter": e.chapter,
                "note": e.note,
            }
            for e in fact.events.order_by("id")
        ],
        "values": [
            {"id": f.key, "value": f.value, "status": f.status, "source_chapter": f.source_chapter} for f in group
        ],
    }


class FactRow(NamedTuple):
    """The columns of a fact a context pack reads (a plain row: a pack reads hundreds of facts)."""

    pk: int
    key: str
    category: str
    subject: str
    field: str
    value: str
    source_chapter: int
    confidence: float
    entity_ref: str
    revises_id: int | None
    closed_chapter: int | None
    decided_at: datetime | None


def facts_as_of(
    *, book: Book, as_of: int, categories: list[str] | None = None, subjects: set[str] | None = None
) -> list[tuple[FactRow, str, str]]:
    """Facts established at or before ``as_of`` with their status *at that chapter* and the reason,
    re-resolved from the group (so a pack for an old chapter sees that chapter's truth)."""
    # Only the columns a pack reads, as tuples: evidence is the bulk of a row, and model instances
    # cost more than the query itself.
    rows = Fact.objects.filter(book=book, source_chapter__lte=as_of)
    if categories:
        rows = rows.filter(category__in=categories)
    if subjects is not None:
        rows = rows.filter(subject__in=sorted(subjects))
    groups: dict[tuple[str, str, str], list[FactRow]] = defaultdict(list)
    for row in rows.order_by("category", "subject", "field", "source_chapter", "key").values_list(*FactRow._fields):
        fact = FactRow._make(row)
        groups[(fact.category, fact.subject, fact.field)].append(fact)
    out = []
    for facts in groups.values():
        resolved = group_resolve(fact_views(facts), as_of=as_of)
        for f in facts:
            res = resolved[f.key]
            out.append((f, res.status, res.reason))
    return out


# --- working layer -------------------------------------------------------------------------------


def chapter_volume(*, book: Book, number: int) -> int | None:
    """The volume of ``number``: its own row, else the volume range containing it, else the last volume."""
    row = Chapter.objects.filter(book=book, number=number).values_list("volume", flat=True).first()
    if row:
        return row
    vol = (
        Volume.objects.filter(book=book, start_chapter__lte=number, end_chapter__gte=number)
        .values_list("number", flat=True)
        .first()
    )
    if vol is None:
        vol = Volume.objects.filter(book=book).order_by("-number").values_list("number", flat=True).first()
    return vol


def chapter_outline(*, book: Book, number: int) -> dict[str, Any]:
    """This chapter's outline: the 卷纲 sections whose heading names the chapter (第N章, 第A-B章) or, when
    no heading does, the volume outline's sections that name no chapter (flagged ``whole_volume``)."""
    volume = chapter_volume(book=book, number=number)
    doc = (
        Document.objects.filter(book=book, kind=Document.Kind.VOLUME_OUTLINE, key=str(volume)).first()
        if volume is not None
        else None
    )
    if doc is None:
        return {"volume": volume, "sections": [], "whole_volume": False}
    sections = list(doc.sections.order_by("order").values("order", "heading", "body"))
    mine = []
    for s in sections:
        for m in _RANGE.finditer(s["heading"] or ""):
            lo = int(m.group(1))
            hi = int(m.group(2) or lo)
            if lo <= number <= hi:
                mine.append(s)
                break
    whole = not mine
    # No heading names this chapter: the volume's general sections (those naming no chapter at all).
    chosen = mine or [s for s in sections if s["body"].strip() and not _RANGE.search(s["heading"] or "")]
    return {
        "volume": volume,
        "whole_volume": whole,
        "sections": [{"order": s["order"], "heading": s["heading"], "body": s["body"].strip()} for s in chosen],
    }


def master_outline(*, book: Book) -> list[dict[str, Any]]:
    doc = Document.objects.filter(book=book, kind=Document.Kind.MASTER_OUTLINE).first()
    if doc is None:
        return []
    return [
        {"order": s["order"], "heading": s["heading"], "body": s["body"].strip()}
        for s in doc.sections.order_by("order").values("order", "heading", "body")
        if s["body"].strip()
    ]


def chapters_recent(*, book: Book, before: int, count: int = RECENT_CHAPTERS) -> list[dict[str, Any]]:
    """The ``count`` chapters before ``before`` (latest first) with summary, meta and the body's tail."""
    rows = (
        Chapter.objects.filter(book=book, number__lt=before)
        .order_by("-number")
        .values("number", "title", "summary", "body", "mood_position", "chapter_position", "hook_type", "perspective")[
            :count
        ]
    )
    out = []
    for r in rows:
        body = r.pop("body").strip()
        r["tail"] = body[-TAIL_CHARS:] if body else ""
        out.append(r)
    return out


def chapter_row(*, book: Book, number: int) -> dict[str, Any] | None:
    return (
        Chapter.objects.filter(book=book, number=number)
        .values("number", "title", "summary", "perspective", "mood_position", "hook_type", "story_time")
        .first()
    )


def characters_on_stage(*, book: Book, number: int, task: str, outline_text: str) -> list[Entity]:
    """Who is on stage, most important first: named in this chapter's outline, in its timeline row,
    its point of view, then (write) the previous chapter's appearances or (review/query) its own."""
    names = name_index(book=book)
    scores: dict[int, list[int]] = {}

    def bump(pks: tuple[int, ...], weight: int, count: int = 0) -> None:
        for pk in pks:
            score = scores.setdefault(pk, [0, 0])
            score[0] += weight
            score[1] += count

    for name in names.found(outline_text):
        bump(names.characters.get(name, ()), 100)
    for present in TimelineRow.objects.filter(book=book, chapter=number).values_list("present", flat=True):
        for name in present or []:
            bump(names.characters.get(name, ()), 50)
    appearances_chapter = number - 1 if task == "write" else number
    pov = Chapter.objects.filter(book=book, number=appearances_chapter).values_list("perspective", flat=True).first()
    bump(names.characters.get(pov or "", ()), 30)
    live = {pk for pks in names.characters.values() for pk in pks}
    for pk, count in Appearance.objects.filter(book=book, chapter=appearances_chapter).values_list(
        "entity_id", "count"
    ):
        if pk in live:
            bump((pk,), 10, count)
    by_pk = {e.pk: e for e in Entity.objects.filter(pk__in=list(scores))}
    ranked = sorted(by_pk, key=lambda pk: (-scores[pk][0], -scores[pk][1], by_pk[pk].entity_id))
    return [by_pk[pk] for pk in ranked[:MAX_ON_STAGE]]


def protagonists(*, book: Book) -> list[Entity]:
    return list(Entity.objects.filter(book=book, is_protagonist=True, archived=False).order_by("entity_id"))


def entity_states(*, entities: list[Entity], as_of: int) -> dict[int, dict[str, Any]]:
    """The states of several entities as of a chapter (one query): entity pk → state."""
    return entity_states_as_of(entities=list({e.pk: e for e in entities}.values()), number=as_of)


def pacing_signals(*, book: Book, chapter: int, window: int = 10) -> dict[str, Any]:
    """Strand / pacing signals before ``chapter``: chapters since the last 大爽 and 小爽, the mood and
    position sequence of the last ``window`` chapters, the weak-hook streak, and for each thread
    type (the strands 伏笔 / 悬念 / 感情线) the chapters since one was last opened, advanced or closed."""
    rows = list(
        Chapter.objects.filter(book=book, number__lt=chapter)
        .order_by("-number")
        .values_list("number", "mood_position", "chapter_position", "hook_type")[:200]
    )
    last_big = next((n for n, mood, _, _ in rows if mood == Chapter.Mood.BIG_PAYOFF), None)
    last_small = next((n for n, mood, _, _ in rows if mood == Chapter.Mood.SMALL_PAYOFF), None)
    recent = list(reversed(rows[:window]))
    streak = 0
    for _, _, _, hook in rows:
        if hook and hook.endswith("-弱"):
            streak += 1
        else:
            break
    touched: dict[str, int] = {}
    types = dict(Thread.objects.filter(book=book).values_list("thread_id", "type"))
    for number, opens, advances, closes in (
        Chapter.objects.filter(book=book, number__lt=chapter)
        .order_by("-number")
        .values_list("number", "opens", "advances", "closes")[:100]
    ):
        for tid in list(opens or []) + list(advances or []) + list(closes or []):
            kind = types.get(str(tid))
            if kind and kind not in touched:
                touched[kind] = number
    return {
        # Fewer chapters than the window: no payoff rhythm can be judged yet (a young book).
        "chapters_seen": len(rows),
        "min_chapters": window,
        "too_few_chapters": len(rows) < window,
        "since_big_payoff": (chapter - last_big) if last_big else None,
        "since_small_payoff": (chapter - last_small) if last_small else None,
        "moods": [{"chapter": n, "mood": m, "position": p} for n, m, p, _ in recent],
        "weak_hook_streak": streak,
        "weak_hook_limit": book.threshold("weak_hook_streak"),
        "strands": {t: (chapter - touched[t]) if t in touched else None for t in Thread.Type.values},
    }


# --- observability -------------------------------------------------------------------------------


def memory_health(*, book: Book, chapter: int | None = None) -> dict[str, Any]:
    """Health of the book's memory at ``chapter`` (default: the latest): open loops overdue, contradicted
    facts, constraints that drifted (a later fact of the same subject and field disagrees with the
    constraint), and counts per category and status."""
    now = chapter if chapter is not None else (book_current_chapter(book=book) or 0)
    # Which loops are overdue is the threads app's one definition (threads.selectors.thread_hangs_overdue:
    # hung past its type's threshold since its last activity, or past its planned end), at the report's chapter.
    loops: dict[str, tuple[str, str]] = {}  # thread id → its open-loop fact (key, value), the active one first
    for subject, key, value, status in (
        Fact.objects.filter(book=book, category=Fact.Category.OPEN_LOOP)
        .order_by("source_chapter", "key")
        .values_list("subject", "key", "value", "status")
    ):
        if subject not in loops or status == Fact.Status.ACTIVE:
            loops[subject] = (key, value)
    overdue = []
    for row in thread_hangs_overdue(book=book, as_of=now)["threads"]:
        key, value = loops.get(row["id"], (None, row["title"]))
        overdue.append(
            {
                "id": key,
                "thread": row["id"],
                "type": row["type"],
                "value": value,
                "opened": row["opened_chapter"],
                "last_activity": row["last_activity_chapter"],
                "hanging": row["hang"],
                "threshold": row["threshold"],
                "planned_end": row["planned_end_chapter"],
                "reason": row["overdue_reason"],
            }
        )
    contradicted = [
        fact_to_dict(f)
        for f in Fact.objects.filter(book=book, status=Fact.Status.CONTRADICTED)
        .select_related("superseded_by", "revises")
        .order_by("category", "subject", "field", "source_chapter", "key")
    ]
    drifted = []
    for c in Fact.objects.filter(book=book, category=Fact.Category.CONSTRAINT, status=Fact.Status.ACTIVE).order_by(
        "subject", "field", "key"
    ):
        later = (
            Fact.objects.filter(
                book=book,
                subject=c.subject,
                field=c.field,
                status=Fact.Status.ACTIVE,
                source_chapter__gt=c.source_chapter,
            )
            .exclude(category=Fact.Category.CONSTRAINT)
            .order_by("-source_chapter", "key")
            .first()
        )
        if later is not None and "".join(later.value.split()) != "".join(c.value.split()):
            drifted.append(
                {
                    "constraint": fact_to_dict(c),
                    "current": {"id": later.key, "value": later.value, "source_chapter": later.source_chapter},
                    "reason": f"约束要求「{c.value}」，但第{later.source_chapter}章之后为「{later.value}」",
                }
            )
    counts: dict[str, dict[str, int]] = {}
    for cat, status in Fact.objects.filter(book=book).values_list("category", "status"):
        counts.setdefault(cat, {}).setdefault(status, 0)
        counts[cat][status] += 1
    return {
        "book": book.slug,
        "chapter": now,
        "open_loops_overdue": overdue,
        "contradicted": contradicted,
        "constraints_drifted": drifted,
        "counts": counts,
    }


def memory_hits(*, book: Book, chapter: int | None = None) -> list[dict[str, Any]]:
    rows = MemoryHit.objects.filter(book=book)
    if chapter is not None:
        rows = rows.filter(chapter=chapter)
    return [
        {
            "chapter": h.chapter,
            "task": h.task,
            "budget_tokens": h.budget_tokens,
            "used_tokens": h.used_tokens,
            "mode": h.mode,
            "retrieval": h.retrieval,
            "items": h.items,
            "skipped": h.skipped,
            "built_at": h.built_at.isoformat(),
        }
        for h in rows.order_by("-chapter", "task")
    ]


def scratchpad_export(*, book: Book) -> dict[str, Any]:
    """The plugin's ``memory_scratchpad.json``: one bucket per category, items in the plugin's shape."""
    buckets: dict[str, list[dict[str, Any]]] = {c: [] for c in Fact.Category.values}
    for fact in Fact.objects.filter(book=book).order_by("category", "subject", "field", "source_chapter", "key"):
        buckets[fact.category].append(
            {
                "id": fact.key,
                "category": fact.category,
                "subject": fact.subject,
                "field": fact.field,
                "value": fact.value,
                "status": fact.status,
                "source_chapter": fact.source_chapter,
                "evidence": fact.evidence,
                "confidence": fact.confidence,
                "updated_at": fact.updated_at.isoformat() if fact.updated_at else None,
                **(fact.extra or {}),  # an imported item's payload / layer, back as written
            }
        )
    return {"meta": scratchpad_meta(book=book), **buckets}


SCRATCHPAD_VERSION = 2  # the plugin's memory_scratchpad.json version whose shape the export keeps


def scratchpad_meta(*, book: Book) -> dict[str, Any]:
    """The seed's scratchpad ``meta``: ``version``, ``updated_at`` (the latest change of a fact, None for an
    empty memory), ``compaction_count`` (facts compaction merged or dropped, one tombstone each) and
    ``facts`` (how many the export holds)."""
    agg = Fact.objects.filter(book=book).aggregate(last=Max("updated_at"), n=Count("pk"))
    return {
        "version": SCRATCHPAD_VERSION,
        "updated_at": agg["last"].isoformat() if agg["last"] else None,
        "compaction_count": FactTombstone.objects.filter(book=book).count(),
        "facts": agg["n"],
    }
