"""The canon-change reporter (registered in ``ContinuityConfig.ready()``, kernel/indexing.py): after ``sync``
or ``finalize`` rewrote a chapter or a setting file, the findings the *other* chapters have now and
did not have before — a character killed off in a revised chapter 87 who still speaks in 120.

"Before" is the canon as the database held it when the write began: ``canon_change_report`` loads a
``Canon`` then (in the same process, inside the write's transaction), the write goes on, and
``finish`` loads the new one. Nothing is stored between syncs.

What it costs, and how it is bounded:

- nothing when only the newest chapters were written and no file the canon is read from changed
  (cards, roster, threads, secrets, style, timelines; not outlines or the worldview) — the usual
  ``finalize`` of the chapter just written: there is no later chapter to spoil;
- otherwise two canon loads and a comparison of what the check reads from the canon: each entity's
  card, names and state changes, the aliases and their windows, every chapter's ``hook_type`` and
  ``closes``, threads, secrets, the style rules. When they are equal — an edit of the prose only —
  no chapter is checked (``skipped``);
- when they differ, only the chapters the difference can reach are checked, each twice (old canon,
  new canon), walking forward once: chapters after the first changed one whose stored text holds a
  name of a changed entity or item, a changed alias or a changed secret's keyword; chapters whose
  front matter names a changed thread; the weak-hook streak's reach after a changed ``hook_type``;
  every chapter when the style rules or the book's continuity rules changed. The rewritten
  chapters themselves are left out (their old text is gone from the folder: check them as drafts).

A finding is new when the old canon did not give the same chapter the same kind, term and line;
resolved when the old canon gave it and the new one does not. ``canon_diff`` says what changed (关羽
status 死亡：第77章 → 第50章), so that moving a death back reports the findings it took away."""

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ahocorasick

from bookfiles.parser.files import file_kind
from continuity.canon import Canon, as_list
from continuity.draft import DraftError
from continuity.selectors import ChapterFiles, chapter_draft, draft_findings
from continuity.waivers import waivers_apply, waivers_read
from core.models import Book, Chapter

FINDINGS_SHOWN_MAX = 500  # the report lists at most this many (the count is always exact)
# the files besides chapters that the canon is read from (outlines and the worldview are not; a timeline
# is, for the state changes its rows declare)
CANON_FILE_KINDS = frozenset({"character_card", "roster", "thread", "secret", "style", "book", "timeline"})


def canon_change_report(*, book: Book, numbers: list[int], paths: list[str]) -> Callable[[], dict] | None:
    """Snapshot the canon before a finalize / sync writes; the returned ``finish`` reports what changed."""
    rows = dict(
        Chapter.objects.filter(book=book, source_path__in=paths).order_by().values_list("source_path", "number")
    )
    written = set(numbers) | set(rows.values())
    settings_changed = any(file_kind(path) in CANON_FILE_KINDS for path in paths)
    last = Chapter.objects.filter(book=book).order_by("-number").values_list("number", flat=True).first()
    if last is None or (not settings_changed and (not written or min(written) >= last)):
        return None  # no other chapter the write can reach
    old = Canon(book=book)

    def finish() -> dict[str, Any]:
        return _report(book=book, old=old, new=Canon(book=book), written=written)

    return finish


# ── what changed in the canon ───────────────────────────────────────────────────────────────────


def _entity_view(canon: Canon) -> dict[str, tuple]:
    """entity_id → what the check reads of it (card, names, state changes in order)."""
    changes: dict[int, list[tuple]] = defaultdict(list)
    for chapter, pk, op, fname, new in canon.changes:
        changes[pk].append((chapter, op, fname, _Value(new)))
    return {
        e.entity_id: (e.type, e.name, repr(sorted(e.base_state.items())), frozenset(e.names), tuple(changes[e.pk]))
        for e in canon.entities.values()
    }


class _Value:
    """A state change's value (any JSON), compared by its repr and still readable as a value."""

    __slots__ = ("value", "_repr")

    def __init__(self, value: Any) -> None:
        self.value, self._repr = value, repr(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Value) and self._repr == other._repr

    def __hash__(self) -> int:
        return hash(self._repr)


def _alias_view(canon: Canon) -> dict[str, frozenset]:
    ids = {pk: e.entity_id for pk, e in canon.entities.items()}
    return {
        alias: frozenset((ids.get(pk), vf, vt, generic) for pk, vf, vt, _, _, generic in rows)
        for alias, rows in canon.aliases.items()
    }


def _thread_view(canon: Canon) -> dict[str, tuple]:
    return {
        tid: (t.status, t.opened_chapter, t.closed_chapter, t.planned_end, t.planned_end_volume)
        for tid, t in canon.threads.items()
    }


def _secret_view(canon: Canon) -> dict[str, tuple]:
    return {
        s.secret_id: (
            tuple(canon.keywords_of(s)),
            s.reader_told_chapter,
            s.reader_knows,
            repr(s.known_to),
            s.registered_chapter,
        )
        for s in canon.secrets
    }


def _differing(old: dict, new: dict) -> set:
    return {key for key in old.keys() | new.keys() if old.get(key) != new.get(key)}


class _Reach:
    """Which chapters a canon difference can change the findings of."""

    def __init__(self) -> None:
        self.start: int | None = None  # the first chapter whose canon changed (None: none did)
        self.terms: set[str] = set()  # a chapter holding one of these is checked
        self.threads: set[str] = set()  # a chapter whose front matter names one is checked
        self.numbers: set[int] = set()  # checked anyway
        self.every = False  # check every chapter from ``start``

    def at(self, number: int | None) -> None:
        number = number or 1
        self.start = number if self.start is None else min(self.start, number)


def changes_differing(old: tuple, new: tuple) -> set:
    """The (chapter, op, field, value) state changes that differ between two lists of one entity's:
    those in one only, or — the same changes in another order or count (a roster edit that renumbers
    them) — those at the positions where the lists part."""
    changed = set(old) ^ set(new)
    if not changed:
        changed = {x for x, y in zip(old, new, strict=False) if x != y} | set(old[len(new) :] + new[len(old) :])
    return changed


def _reach(old: Canon, new: Canon) -> _Reach:
    reach = _Reach()
    a_rules, b_rules = vars(old.rules).copy(), vars(new.rules).copy()
    words = set(a_rules.pop("banned_words")) ^ set(b_rules.pop("banned_words"))
    a_rules.pop("problems"), b_rules.pop("problems")
    if a_rules != b_rules:  # statuses, the ladder, quotes …: any chapter may read differently
        reach.at(1)
        reach.every = True
        return reach
    if words:
        reach.at(1)
        reach.terms.update(words)
    old_entities, new_entities = _entity_view(old), _entity_view(new)
    possession = set(old.rules.possession_fields)
    for entity_id in _differing(old_entities, new_entities):
        a, b = old_entities.get(entity_id), new_entities.get(entity_id)
        if a is None or b is None or a[:4] != b[:4]:
            reach.at(1)  # the card or the names changed: every chapter is as of it
        else:
            changed = changes_differing(a[4], b[4])
            reach.at(min((c[0] for c in changed), default=1))
            items = {v for _, _, fname, value in changed if fname in possession for v in as_list(value.value)}
            for canon in (old, new):
                items |= {canon.item_canonical(v) for v in items}
                reach.terms.update(name for name, canonical in canon.item_names.items() if canonical in items)
        for view in (a, b):
            if view is not None:
                reach.terms.update(view[3])
    for alias in _differing(_alias_view(old), _alias_view(new)):
        reach.at(1)
        reach.terms.add(alias)
    for tid in _differing(_thread_view(old), _thread_view(new)):
        reach.at(1)
        reach.threads.add(tid)
    old_secrets, new_secrets = _secret_view(old), _secret_view(new)
    for sid in _differing(old_secrets, new_secrets):
        reach.at(1)
        for view in (old_secrets.get(sid), new_secrets.get(sid)):
            if view is not None:
                reach.terms.update(view[0])
    streak = new.book.threshold("weak_hook_streak") or 0
    for number in old.chapters.keys() | new.chapters.keys():
        a, b = old.chapters.get(number) or {}, new.chapters.get(number) or {}
        if a.get("hook_type") != b.get("hook_type"):
            reach.at(number)
            # a weak-hook streak through ``number`` ends at most ``streak`` chapters later
            reach.numbers.update(range(number, number + max(streak, 1)))
        if (a.get("closes") or []) != (b.get("closes") or []):
            reach.at(number)
            reach.threads.update(set(a.get("closes") or []) ^ set(b.get("closes") or []))
    return reach


def _candidates(book: Book, reach: _Reach, written: set[int]) -> list[int]:
    rows = Chapter.objects.filter(book=book, number__gte=reach.start).order_by("number")
    if reach.every:
        numbers = list(rows.values_list("number", flat=True))
    else:
        automaton = None
        terms = {t for t in reach.terms if t}
        if terms:
            automaton = ahocorasick.Automaton()
            for term in terms:
                automaton.add_word(term, term)
            automaton.make_automaton()
        numbers = []
        for number, body, advances, closes, opens in rows.values_list(
            "number", "body", "advances", "closes", "opens"
        ).iterator():
            named = {*(advances or []), *(closes or []), *(opens or [])}
            if (
                number in reach.numbers
                or named & reach.threads
                or (automaton is not None and next(automaton.iter(body or ""), None) is not None)
            ):
                numbers.append(number)
    return [n for n in numbers if n not in written]


# ── the report ──────────────────────────────────────────────────────────────────────────────────


def _key(finding: dict[str, Any]) -> tuple:
    return (finding["kind"], finding["term"], finding["line"])


def _report(*, book: Book, old: Canon, new: Canon, written: set[int]) -> dict[str, Any]:
    reach = _reach(old, new)
    if reach.start is None:
        return {
            "from": None,
            "checked": 0,
            "skipped": "设定与状态没有变化，只改了正文文字",
            "counts": {"error": 0, "warning": 0, "info": 0},
            "findings": [],
        }
    numbers = _candidates(book, reach, written)
    waivers, _ = waivers_read(root=book.root)
    found: list[dict[str, Any]] = []
    resolved: list[dict[str, Any]] = []  # the findings the old canon gave and the new one does not
    rows = Chapter.objects.filter(book=book, number__in=numbers).order_by("number")
    files = ChapterFiles(Path(book.root)) if book.root else None
    for row in rows.only("number", "source_path", "content_hash", "front_matter").iterator():
        try:
            draft = chapter_draft(book, row, files)
        except DraftError:
            continue  # the range check reports an unreadable chapter; this report is about the change
        old.advance(to=row.number - 1)
        new.advance(to=row.number - 1)
        earlier = draft_findings(draft=draft, canon=old, number=row.number)
        after = draft_findings(draft=draft, canon=new, number=row.number)
        waivers_apply(earlier, number=row.number, waivers=waivers)
        waivers_apply(after, number=row.number, waivers=waivers)
        before, now = {_key(f) for f in earlier}, {_key(f) for f in after}
        for item in after:
            if not item["waived"] and _key(item) not in before:
                found.append({"chapter": row.number, "file": row.source_path, **item})
        for item in earlier:
            if not item["waived"] and _key(item) not in now:
                resolved.append({"chapter": row.number, "file": row.source_path, **item})
    return {
        "from": reach.start,
        "checked": len(numbers),
        "canon_diff": canon_diff(old, new),
        "counts": _severities(found),
        "findings": found[:FINDINGS_SHOWN_MAX],
        "resolved_counts": _severities(resolved),
        "resolved": resolved[:FINDINGS_SHOWN_MAX],
    }


def _severities(findings: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for item in findings:
        counts[item["severity"]] += 1
    return counts


def canon_diff(old: Canon, new: Canon) -> list[str]:
    """What changed in the canon, for the author: a state change moved (关羽 status 死亡：第77章 → 第50章),
    added or removed; a card, alias, thread or secret changed."""
    lines: list[str] = []
    old_entities, new_entities = _entity_view(old), _entity_view(new)
    for entity_id in sorted(_differing(old_entities, new_entities)):
        a, b = old_entities.get(entity_id), new_entities.get(entity_id)
        name = (b or a)[1]
        if a is None or b is None or a[:4] != b[:4]:
            lines.append(f"{name}：角色卡或名字" + ("新增" if a is None else "删除" if b is None else "改动"))
            if a is None or b is None:
                continue
        gone = [c for c in a[4] if c not in b[4]]
        came = [c for c in b[4] if c not in a[4]]
        for chapter, op, field, value in gone:
            moved = next((c for c in came if c[1:] == (op, field, value)), None)
            if moved is not None:
                came.remove(moved)
                lines.append(f"{name} {field} {value.value}：第{chapter}章 → 第{moved[0]}章")
            else:
                lines.append(f"{name} {field} {value.value}：删去（原在第{chapter}章）")
        lines.extend(f"{name} {field} {value.value}：新增于第{chapter}章" for chapter, op, field, value in came)
    lines.extend(f"别名「{alias}」改动" for alias in sorted(_differing(_alias_view(old), _alias_view(new))))
    lines.extend(f"线索 {tid} 改动" for tid in sorted(_differing(_thread_view(old), _thread_view(new))))
    lines.extend(f"信息差 {sid} 改动" for sid in sorted(_differing(_secret_view(old), _secret_view(new))))
    return lines
