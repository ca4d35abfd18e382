"""Facts derived from structured data — never from summarizing free text.

Two scopes, each recomputed as a whole and diffed against the stored facts by key, so deriving twice
changes nothing and a re-finalized chapter replaces only its own facts:

- book-wide (origin ``setting``, recomputed on every call): world rules (世界观 sections), style rules
  as active constraints, entities' initial states (chapter 0), one open loop per thread (closed when the
  thread is closed or abandoned), thread outcomes, reader promises (高 threads with a planned end),
  and secrets the reader does not know yet (an active constraint until the chapter the reader is told);
- per chapter (origin ``derived``, for the chapters given): the story time when it moves, the closing
  hook (a promise to pay off next chapter), timeline rows, entities first appearing, entity state
  changes (the value after the chapter, one fact per source when sources disagree), relationships,
  and the extraction's ``chapter_meta`` (subject 章节元数据: the latest chapter's value wins).
"""

import datetime
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from core.models import Book, Chapter, Document, SourceFile, TimelineRow
from entities.models import Entity, Extraction, RelationshipEvent, StateChange
from entities.state_ops import op_apply
from kernel.bulk import rows_insert, rows_update
from memory.models import DerivationStamp, Fact, FactEvent, FactTombstone
from memory.services import GroupKey, events_insert, fact_key_make, facts_delete, groups_resolve, setting_facts_state
from threads.models import Secret, Thread, ThreadHistoryEntry

C = Fact.Category


@dataclass
class Obs:
    category: str
    subject: str
    field: str
    value: str
    chapter: int
    evidence: list[dict[str, Any]] = field(default_factory=list)
    confidence: float = 1.0
    entity_ref: str = ""
    closed_chapter: int | None = None


def value_text(value: Any) -> str:
    """A state value as authors read it: lists joined by 、, mappings as JSON, nothing as （无）."""
    if value is None or value == "" or value == []:
        return "（无）"
    if isinstance(value, list | tuple):
        return "、".join(value_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _knower(entry: Any, registered: int | None) -> str:
    """A knower of a secret; "since" is shown only when it is later than the secret's registration."""
    if not isinstance(entry, dict):
        return str(entry)
    name = str(entry.get("name", ""))
    since = entry.get("since")
    return f"{name}（第{since}章起）" if since and since > (registered or 0) else name


# --- book-wide ---------------------------------------------------------------------------------


def book_observations(*, book: Book) -> list[Obs]:
    out: list[Obs] = []
    for doc in Document.objects.filter(book=book, kind__in=[Document.Kind.WORLDVIEW, Document.Kind.STYLE]).order_by(
        "kind", "key"
    ):
        for section in doc.sections.order_by("order"):
            body = section.body.strip()
            if not body:
                continue
            heading = section.heading or "总则"
            if doc.kind == Document.Kind.WORLDVIEW:
                out.append(Obs(C.WORLD_RULE, heading, "设定", body, 0, [{"kind": "worldview", "section": heading}]))
            else:
                out.append(
                    Obs(
                        C.CONSTRAINT,
                        f"文风·{doc.key}",
                        heading,
                        body,
                        0,
                        [{"kind": "style", "document": doc.key, "section": heading}],
                    )
                )
    entities = Entity.objects.filter(book=book, archived=False).exclude(base_state={}).order_by("entity_id")
    for ent in entities.only("entity_id", "canonical_name", "base_state"):
        for key in sorted(ent.base_state):
            out.append(
                Obs(
                    C.CHARACTER,
                    ent.canonical_name,
                    key,
                    value_text(ent.base_state[key]),
                    0,
                    [{"kind": "setting", "entity": ent.entity_id}],
                    entity_ref=ent.entity_id,
                )
            )
    closes_by_chapter: dict[str, int] = {}
    closing = Chapter.objects.filter(book=book).exclude(closes=[]).order_by("number")
    for number, closes in closing.values_list("number", "closes"):
        for tid in closes or []:
            closes_by_chapter.setdefault(str(tid), number)
    history: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for tid, chapter, text in (
        ThreadHistoryEntry.objects.filter(thread__book=book)
        .order_by("thread_id", "order")
        .values_list("thread_id", "chapter", "text")
    ):
        history[tid].append({"kind": "thread_history", "chapter": chapter, "text": _short(text, 80)})
    for thread in Thread.objects.filter(book=book).order_by("thread_id"):
        opened = thread.opened_chapter or 0
        closed = thread.closed_chapter or closes_by_chapter.get(thread.thread_id)
        if thread.status == Thread.Status.CLOSED and closed is None:
            closed = opened
        if thread.status == Thread.Status.ABANDONED and closed is None:
            closed = opened
        desc = _short(thread.description, 160)
        value = f"{thread.title}：{desc}" if desc else thread.title or thread.thread_id
        if thread.planned_end_label:  # 第40章, or 第7卷 (seed 002 §1.2 allows both)
            value += f"（计划{thread.planned_end_label}前后收尾）"
        evidence = [{"kind": "thread", "id": thread.thread_id, "chapter": opened}] + history.get(thread.pk, [])
        out.append(Obs(C.OPEN_LOOP, thread.thread_id, thread.type, value, opened, evidence, closed_chapter=closed))
        if closed is not None:
            outcome = "已放弃" if thread.status == Thread.Status.ABANDONED else "已收尾"
            out.append(
                Obs(
                    C.STORY,
                    thread.thread_id,
                    "结局",
                    f"{thread.title}：第{closed}章{outcome}",
                    closed,
                    [{"kind": "thread", "id": thread.thread_id, "chapter": closed}],
                )
            )
        if thread.strength == Thread.Strength.HIGH and thread.planned_end_label:
            plan = _short(thread.closing_plan, 120) or thread.title
            out.append(
                Obs(
                    C.READER_PROMISE,
                    thread.thread_id,
                    "兑现",
                    f"{thread.title}：{plan}（计划{thread.planned_end_label}前后）",
                    opened,
                    [{"kind": "thread", "id": thread.thread_id, "chapter": opened}],
                    closed_chapter=closed,
                )
            )
    for secret in Secret.objects.filter(book=book).order_by("secret_id"):
        if secret.reader_knows and secret.reader_told_chapter is None:
            continue
        knowers = "、".join(_knower(k, secret.registered_chapter) for k in (secret.known_to or []))
        value = f"读者尚不知：{secret.title or _short(secret.content, 60)}"
        if knowers:
            value += f"（知情者：{knowers}）"
        out.append(
            Obs(
                C.CONSTRAINT,
                secret.secret_id,
                "保密",
                value,
                secret.registered_chapter or 0,
                [{"kind": "secret", "id": secret.secret_id, "chapter": secret.registered_chapter}],
                closed_chapter=secret.reader_told_chapter,
            )
        )
    return out


# --- per chapter -------------------------------------------------------------------------------


def chapter_observations(*, book: Book, chapters: list[int]) -> list[Obs]:
    wanted = set(chapters)
    out: list[Obs] = []
    rows = {
        r["number"]: r
        for r in Chapter.objects.filter(book=book)
        .filter(number__in=wanted | {n - 1 for n in wanted})
        .values("number", "story_time", "hook_type", "summary")
    }
    previous_time: dict[int, str] = {}
    numbers_all = sorted(rows)
    for i, n in enumerate(numbers_all):
        previous_time[n] = rows[numbers_all[i - 1]]["story_time"] if i > 0 and numbers_all[i - 1] == n - 1 else ""
    for n in sorted(wanted & set(rows)):
        row = rows[n]
        if row["story_time"] and row["story_time"] != previous_time.get(n):
            out.append(
                Obs(C.TIMELINE, "书内时间", "当前", row["story_time"], n, [{"kind": "chapter_meta", "chapter": n}])
            )
        if row["hook_type"]:
            hook = f"第{n}章以「{row['hook_type']}」收尾"
            if row["summary"]:
                hook += f"：{_short(row['summary'], 120)}"
            out.append(Obs(C.READER_PROMISE, "章末钩子", "待兑现", hook, n, [{"kind": "chapter_meta", "chapter": n}]))
    for tr in TimelineRow.objects.filter(book=book, chapter__in=wanted).order_by("chapter", "volume", "order"):
        value = tr.event.strip()
        if tr.present:
            value += f"（在场：{'、'.join(tr.present)}）"
        if value:
            out.append(
                Obs(
                    C.TIMELINE,
                    f"第{tr.chapter}章",
                    f"事件{tr.order + 1}",
                    value,
                    tr.chapter,
                    [{"kind": "timeline", "volume": tr.volume, "order": tr.order}],
                )
            )
    for ent in Entity.objects.filter(book=book, first_appearance__in=wanted).order_by("entity_id"):
        out.append(
            Obs(
                C.STORY,
                ent.canonical_name,
                "首次登场",
                f"第{ent.first_appearance}章首次登场（{ent.type}）",
                ent.first_appearance,
                [{"kind": "new_entity", "entity": ent.entity_id, "chapter": ent.first_appearance}],
                entity_ref=ent.entity_id,
            )
        )
    out.extend(_state_observations(book=book, chapters=wanted))
    for number, meta in (
        Extraction.objects.filter(book=book, chapter__in=wanted)
        .order_by("chapter")
        .values_list("chapter", "chapter_meta")
    ):
        for key in sorted(meta or {}):
            value = value_text(meta[key])
            if value != "（无）":
                out.append(
                    Obs(
                        C.STORY,
                        "章节元数据",
                        str(key),
                        _short(value, 200),
                        number,
                        [{"kind": "chapter_meta", "chapter": number}],
                    )
                )
    events = (
        RelationshipEvent.objects.filter(relationship__book=book, chapter__in=wanted)
        .select_related("relationship__from_entity", "relationship__to_entity")
        .order_by("chapter", "id")
    )
    for ev in events:
        rel = ev.relationship
        desc = ev.description or rel.description
        value = f"{rel.type}：{_short(desc, 80)}" if desc else rel.type
        out.append(
            Obs(
                C.CHARACTER,
                rel.from_entity.canonical_name,
                f"关系·{rel.to_entity.canonical_name}",
                value,
                ev.chapter,
                [{"kind": "relationship", "chapter": ev.chapter, "type": rel.type, "to": rel.to_entity.entity_id}],
                entity_ref=rel.from_entity.entity_id,
            )
        )
    return out


def _state_observations(*, book: Book, chapters: set[int]) -> list[Obs]:
    """The value of each (entity, field) changed in these chapters, after the chapter.

    The value is the replay of every change up to the chapter (ops such as ``add`` need the
    state before). Changes from different sources that end on different values in one chapter
    yield one fact per source, which the resolver then marks contradicted."""
    if not chapters:
        return []
    max_ch = max(chapters)
    touched = set(
        StateChange.objects.filter(book=book, chapter__in=chapters).values_list("entity_id", flat=True).distinct()
    )
    out: list[Obs] = []
    entities = {e.pk: e for e in Entity.objects.filter(pk__in=touched)}
    changes = (
        StateChange.objects.filter(entity_id__in=touched, chapter__lte=max_ch)
        .order_by("entity_id", "chapter", "seq", "id")
        .values("entity_id", "chapter", "seq", "field", "op", "new", "reason", "confidence", "source")
    )
    by_entity: dict[int, list[dict]] = defaultdict(list)
    for ch in changes:
        by_entity[ch["entity_id"]].append(ch)
    for pk in sorted(by_entity):
        ent = entities[pk]
        state = json.loads(json.dumps(ent.base_state or {}))
        rows = by_entity[pk]
        i = 0
        while i < len(rows):
            chapter = rows[i]["chapter"]
            j = i
            while j < len(rows) and rows[j]["chapter"] == chapter:
                j += 1
            block = rows[i:j]
            if chapter in chapters:
                before = json.loads(json.dumps(state))
                for fname in sorted({r["field"] for r in block}):
                    mine = [r for r in block if r["field"] == fname]
                    per_source: dict[str, Any] = {}
                    for source in sorted({r["source"] for r in mine}):
                        s = {fname: json.loads(json.dumps(before.get(fname)))} if fname in before else {}
                        for r in (r for r in mine if r["source"] == source):
                            op_apply(s, op=r["op"], field=fname, value=r["new"])
                        per_source[source] = s.get(fname)
                    distinct = {value_text(v) for v in per_source.values()}
                    if distinct == {value_text(before.get(fname))} and fname in before:
                        continue  # the chapter set the value it already had: nothing new to remember
                    for source, value in per_source.items():
                        rs = [r for r in mine if r["source"] == source or len(distinct) == 1]
                        conf = min((r["confidence"] for r in rs if r["confidence"] is not None), default=1.0)
                        evidence = [
                            {
                                "kind": "state_change",
                                "chapter": chapter,
                                "entity": ent.entity_id,
                                "field": fname,
                                "op": r["op"],
                                "source": r["source"],
                                "reason": _short(r["reason"] or "", 80),
                            }
                            for r in rs
                        ]
                        out.append(
                            Obs(
                                C.CHARACTER,
                                ent.canonical_name,
                                fname,
                                value_text(value),
                                chapter,
                                evidence,
                                confidence=float(conf),
                                entity_ref=ent.entity_id,
                            )
                        )
                        if len(distinct) == 1:
                            break
            for r in block:
                op_apply(state, op=r["op"], field=r["field"], value=r["new"])
            i = j
    return out


# --- apply ---------------------------------------------------------------------------------------


def fact_row(*, book: Book, key: str, obs: Obs, origin: str, now: datetime.datetime) -> dict[str, Any]:
    """A new fact of ``obs`` as a plain row for ``rows_insert`` (status active, not yet superseded):
    the columns a ``Fact(...)`` of the same values would save, without building the instance (a
    rebuild creates ~8,500 of them)."""
    return {
        "book_id": book.pk,
        "key": key,
        "category": obs.category,
        "subject": obs.subject[:200],
        "field": obs.field[:200],
        "value": obs.value,
        "status": Fact.Status.ACTIVE.value,
        "source_chapter": obs.chapter,
        "evidence": obs.evidence,
        "extra": {},  # issue 31: only imported facts carry any
        "confidence": obs.confidence,
        "origin": origin,
        "entity_ref": obs.entity_ref,
        "superseded_by_id": None,
        "revises_id": None,
        "closed_chapter": obs.closed_chapter,
        "decided_at": None,
        "created_at": now,
        "updated_at": now,
    }


def observations_keyed(observations: Iterable[Obs], *, prefix: str) -> dict[str, Obs]:
    """The facts observations make, by key: an observation repeating another's key adds its evidence
    (and its confidence, if higher) to the first; an empty value makes none."""
    desired: dict[str, Obs] = {}
    for obs in observations:
        if not obs.value.strip():
            continue
        key = fact_key_make(
            prefix=prefix,
            category=obs.category,
            subject=obs.subject,
            field=obs.field,
            number=obs.chapter,
            value=obs.value,
        )
        if key in desired:
            merged = desired[key]
            merged.evidence = merged.evidence + [e for e in obs.evidence if e not in merged.evidence]
            merged.confidence = max(merged.confidence, obs.confidence)
        else:
            desired[key] = obs
    return desired


def tombstones_skip(*, book: Book, desired: dict[str, Obs]) -> dict[str, Obs]:
    """Without the derived facts compaction merged or dropped before (their keys are tombstoned)."""
    if not FactTombstone.objects.filter(book=book).exists():
        return desired  # a book rebuilt into an empty database: nothing to read 500 keys at a time
    keys = sorted(desired)
    buried = {
        key
        for start in range(0, len(keys), 500)
        for key in FactTombstone.objects.filter(book=book, key__in=keys[start : start + 500]).values_list(
            "key", flat=True
        )
    }
    return {k: o for k, o in desired.items() if k not in buried}


def _apply(
    *,
    book: Book,
    observations: Iterable[Obs],
    existing: list[Fact],
    origin: str,
    prefix: str,
    touched: set[str] | None = None,
) -> dict[str, int]:
    desired = observations_keyed(observations, prefix=prefix)
    if origin == Fact.Origin.DERIVED and desired:
        desired = tombstones_skip(book=book, desired=desired)
    have = {f.key: f for f in existing}
    groups: set[GroupKey] = set()
    gone = [f for k, f in have.items() if k not in desired]
    for f in gone:
        groups.add((f.category, f.subject, f.field))
    if gone:
        facts_delete([f.pk for f in gone])
    now = timezone.now()
    new_facts = [
        fact_row(book=book, key=key, obs=desired[key], origin=origin, now=now)
        for key in sorted(set(desired) - set(have))
    ]
    for row in new_facts:
        groups.add((row["category"], row["subject"], row["field"]))
    if new_facts:
        rows_insert(Fact, new_facts)
        keys = [row["key"] for row in new_facts]
        created = [
            row
            for start in range(0, len(keys), 500)
            for row in Fact.objects.filter(book=book, key__in=keys[start : start + 500]).values_list(
                "pk", "source_chapter"
            )
        ]
        events_insert(
            [FactEvent(fact_id=pk, action="created", new_status="active", chapter=ch) for pk, ch in created], at=now
        )
    updates = []
    # A loop an author closed by hand stays closed until the data closes it itself.
    closed_by_hand = FactEvent.objects.filter(fact__book=book, action="author_closed")
    if len(have) < 500:  # a finalize: only the facts at hand (the book's whole history otherwise)
        closed_by_hand = closed_by_hand.filter(fact_id__in=[f.pk for f in have.values()])
    by_author = set(closed_by_hand.values_list("fact_id", flat=True))
    for key in sorted(set(desired) & set(have)):
        o, f = desired[key], have[key]
        if o.closed_chapter is None and f.closed_chapter is not None and f.pk in by_author:
            o.closed_chapter = f.closed_chapter
        # Evidence of another chapter was merged in by compaction (a later fact repeating this value,
        # deleted and tombstoned): deriving this chapter again keeps it, as a rebuild's compaction gives.
        o.evidence = o.evidence + [
            e
            for e in f.evidence or []
            if isinstance(e, dict) and e.get("chapter") not in (None, f.source_chapter) and e not in o.evidence
        ]
        if (f.evidence, f.confidence, f.closed_chapter, f.entity_ref) != (
            o.evidence,
            o.confidence,
            o.closed_chapter,
            o.entity_ref,
        ):
            if f.closed_chapter != o.closed_chapter:
                groups.add((f.category, f.subject, f.field))
                note = f"第{o.closed_chapter}章收尾" if o.closed_chapter is not None else "重新打开"
                FactEvent.objects.create(
                    fact=f, action="closed" if o.closed_chapter else "reopened", chapter=o.closed_chapter, note=note
                )
            if f.confidence != o.confidence:
                groups.add((f.category, f.subject, f.field))
            f.evidence, f.confidence, f.closed_chapter, f.entity_ref = (
                o.evidence,
                o.confidence,
                o.closed_chapter,
                o.entity_ref,
            )
            updates.append(f)
    if updates:
        now = timezone.now()
        fields = ["evidence", "confidence", "closed_chapter", "entity_ref", "updated_at"]
        for f in updates:
            f.updated_at = now
        rows_update(Fact, [{"pk": f.pk, **{k: getattr(f, k) for k in fields}} for f in updates], fields)
    changed = groups_resolve(book=book, groups=groups)
    if touched is not None:
        touched.update(g[1] for g in groups)
    return {"created": len(new_facts), "deleted": len(gone), "updated": len(updates), "status_changes": changed}


def book_inputs_digest(*, book: Book) -> str:
    """A digest of what ``book_observations`` reads, from cheap queries: the content hashes of the
    book's non-chapter files (threads, secrets, documents, entity files: their rows change only with
    them, or by hand, which deletes the stamp), the chapters that close threads, and the entities'
    initial states (entities are also written by ingestion and curation, so they are read as they are)."""
    files = SourceFile.objects.filter(book=book).exclude(kind="chapter").order_by("path")
    closes = Chapter.objects.filter(book=book).exclude(closes=[]).order_by("number")
    entities = Entity.objects.filter(book=book, archived=False).exclude(base_state={}).order_by("entity_id")
    data = [
        list(files.values_list("path", "content_hash")),
        list(closes.values_list("number", "closes")),
        list(entities.values_list("entity_id", "canonical_name", "base_state")),
    ]
    return hashlib.sha256(json.dumps(data, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def facts_derive(
    *, book: Book, chapters: list[int], full: bool = False, touched: set[str] | None = None
) -> dict[str, int]:
    """Derive the book-wide facts and those of ``chapters`` (``full``: of every chapter, dropping the
    derived facts of chapters that no longer exist). The subjects whose facts changed are added to
    ``touched``."""
    chapters = sorted(set(chapters))
    stats = defaultdict(int)
    digest = book_inputs_digest(book=book)
    stamp = DerivationStamp.objects.filter(book=book).first()
    if stamp is not None and stamp.inputs == digest and stamp.facts == setting_facts_state(book=book):
        book_wide = {}  # same inputs, setting facts untouched since: applying them again changes nothing
    else:
        book_wide = _apply(
            book=book,
            observations=book_observations(book=book),
            existing=list(Fact.objects.filter(book=book, origin=Fact.Origin.SETTING)),
            origin=Fact.Origin.SETTING,
            prefix="s",
            touched=touched,
        )
    existing = Fact.objects.filter(book=book, origin=Fact.Origin.DERIVED)
    observed = chapters
    if not full:
        existing = existing.filter(source_chapter__in=chapters)
        # A removed chapter's facts go, whatever still names its number (its ingested extraction, a
        # timeline row): what a full derivation, which observes only existing chapters, gives.
        observed = sorted(
            Chapter.objects.filter(book=book, number__in=chapters).order_by().values_list("number", flat=True)
        )
    per_chapter = _apply(
        book=book,
        observations=chapter_observations(book=book, chapters=observed),
        existing=list(existing),
        origin=Fact.Origin.DERIVED,
        prefix="d",
        touched=touched,
    )
    for part in (book_wide, per_chapter):
        for k, v in part.items():
            stats[k] += v
    # After the per-chapter facts too: their resolution may have changed setting facts' statuses.
    DerivationStamp.objects.update_or_create(
        book=book, defaults={"inputs": digest, "facts": setting_facts_state(book=book)}
    )
    return dict(stats)
