"""The canon a draft is checked against: what the book's tables say as of a chapter.

One ``Canon`` loads a book once (entities, names, every state change, threads, secrets, chapters'
front matter, style rules) and replays state changes forward with ``advance(to=N)``: a single draft
costs one load; the retcon mode (chapters K…M, each against the one before it) walks forward through
the same load instead of replaying from the start for every chapter.

It reads through the apps' own selectors and models (entities, threads, the core); it writes nothing."""

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ahocorasick

from continuity.rules import Rules, rules_from
from core.models import Book, Chapter, Document
from entities.mentions import Matcher, matcher_get
from entities.models import Alias, Entity, StateChange
from entities.state_ops import op_apply
from kernel.safefs import regular_file_read
from threads.models import Secret, Thread

# a timeline-declared change's ``reason``: ``时间线/第1卷.md:5 败走麦城`` (entities.roster.timeline_changes_write)
TIMELINE_WHERE = re.compile(r"^(\S+\.md):(\d+)(?:\s|$)")

CHARACTER = "角色"
ITEM = "物品"
EVIDENCE_FILE_MAX = 4 << 20


@dataclass
class EntityRow:
    pk: int
    entity_id: str
    type: str
    name: str
    source_path: str
    base_state: dict[str, Any]
    names: set[str] = field(default_factory=set)  # canonical name and plain aliases (any window)


@dataclass
class Change:
    """Where a state value came from: a chapter's change, or the entity's file (chapter None)."""

    chapter: int | None
    op: str
    value: Any


class Canon:
    """The book as of a chapter (``as_of``; 0 = the setting files only)."""

    def __init__(self, *, book: Book) -> None:
        self.book = book
        self.root = Path(book.root) if book.root else None
        style = Document.objects.filter(book=book, kind=Document.Kind.STYLE).order_by("source_path")
        self.rules: Rules = rules_from(
            config=book.config or {}, style_docs=[(d.source_path or d.key, d.front_matter) for d in style]
        )
        self.matcher: Matcher = matcher_get(book=book)
        self.entities: dict[int, EntityRow] = {}
        for pk, eid, etype, name, path, base in (
            Entity.objects.filter(book=book, archived=False)
            .order_by()
            .values_list("pk", "entity_id", "type", "canonical_name", "source_path", "base_state")
        ):
            self.entities[pk] = EntityRow(pk, eid, etype, name, path, base or {}, {name})
        self.by_entity_id = {e.entity_id: e for e in self.entities.values()}
        # alias → (entity pk, valid_from, valid_to, note, source, generic)
        self.aliases: dict[str, list[tuple[int, int | None, int | None, str, str, bool]]] = defaultdict(list)
        for pk, alias, vf, vt, note, source, generic in (
            Alias.objects.filter(book=book)
            .order_by()
            .values_list("entity_id", "alias", "valid_from", "valid_to", "note", "source", "generic")
        ):
            self.aliases[alias].append((pk, vf, vt, note, source, generic))
            if pk in self.entities and not generic:
                self.entities[pk].names.add(alias)
        rows = (
            StateChange.objects.filter(book=book)
            .order_by("chapter", "seq", "id")
            .values_list("chapter", "entity_id", "op", "field", "new", "source", "reason")
        )
        self.changes = []
        # issue 27: the changes a card or roster entry declares (``changes:``) or a timeline row does
        # (its 状态变化, ``reason`` = ``path:line 事件``) — their evidence is that file
        self.declared: dict[tuple[int, int], list[tuple[str, str, str]]] = defaultdict(list)
        for chapter, pk, op, fname, new, source, reason in rows:
            self.changes.append((chapter, pk, op, fname, new))
            if source == StateChange.Source.FILE:
                self.declared[(pk, chapter)].append((fname, str(new), ""))
            elif source == StateChange.Source.TIMELINE:
                self.declared[(pk, chapter)].append((fname, str(new), reason))
        self._cursor = 0
        self.as_of = 0
        self.states: dict[int, dict[str, Any]] = {pk: dict(e.base_state) for pk, e in self.entities.items()}
        self.last_change: dict[tuple[int, str], Change] = {}
        # (entity pk, item) → chapter it left the character (None while held)
        self.lost: dict[tuple[int, str], int] = {}
        # (entity pk, item) → chapter it came to the character (absent: held since the setting files)
        self.got: dict[tuple[int, str], int] = {}
        self._inactive: dict[Any, bool] = {}
        self._tags: dict[int, list[dict[str, Any]]] = {}
        self._named: dict[str, set[int]] | None = None
        # not the file paths: the column sits after the body in each row, and reading it for every chapter
        # cost a draft check ~30 ms at 3,000 chapters (``chapter_path`` reads the few a finding cites)
        self.chapters: dict[int, dict[str, Any]] = {
            row["number"]: row
            for row in Chapter.objects.filter(book=book).order_by("number").values("number", "hook_type", "closes")
        }
        self._paths: dict[int, str] = {}
        self.threads = {t.thread_id: t for t in Thread.objects.filter(book=book)}
        self.secrets = list(Secret.objects.filter(book=book).order_by("secret_id"))
        self.first_close: dict[str, int] = {}
        for number, row in self.chapters.items():
            for tid in row["closes"] or []:
                self.first_close.setdefault(tid, number)
        self.item_names = self._item_names()
        self._items_automaton = None
        self._lines: dict[tuple[str, str], int | None] = {}
        self._known: set[str] | None = None
        self._windowed: set[str] | None = None
        self._keywords: dict[int, list[str]] = {}
        self.name_keywords: dict[str, bool] = {}  # secret keyword → is a name (names without a window)
        self._timeless: dict[tuple[str, tuple[str, ...]], EntityRow | None] = {}
        self._secret_automaton: Any = False  # built on first use
        self.keyword_owners: dict[str, list[int]] = {}
        self._told_at: list[float] | None = None
        self._planned: dict[int, list[str]] | None = None
        # (keyword, secret indexes) → the ids and the fact of its secret_early finding (the same few
        # combinations come back chapter after chapter)
        self.leak_texts: dict[tuple[str, tuple[int, ...]], tuple[str, str]] = {}
        self._order = {pk: i for i, pk in enumerate(self.entities)}
        # item → pks of the entities holding it now, kept up to date by ``advance`` (a draft asks
        # "who else holds this?" for every item it uses; recomputing it per chapter was the retcon
        # mode's second cost)
        self.held_by: dict[str, set[int]] = defaultdict(set)
        self._held: dict[int, set[str]] = {}  # pk → what it holds now (canonical item names)
        self.inactive_pks: set[int] = set()  # entities whose status now is inactive
        for pk, state in self.states.items():
            self._held[pk] = self.holdings(pk, state)
            for item in self._held[pk]:
                self.lost.pop((pk, item), None)
                self.held_by[item].add(pk)
            self._status_note(pk, state)

    def chapter_path(self, number: int) -> str:
        """The file of chapter ``number`` ('' for no such chapter): one row at a time, all of them once
        many are asked (a range check's findings cite thousands)."""
        if number not in self._paths:
            rows = Chapter.objects.filter(book=self.book)
            if len(self._paths) < 32:
                rows = rows.filter(number=number)
            self._paths.update(rows.values_list("number", "source_path"))
            self._paths.setdefault(number, "")
        return self._paths.get(number, "")

    # ── names ───────────────────────────────────────────────────────────────────────────────────

    def _item_names(self) -> dict[str, str]:
        """Every name of an item → its canonical name: 物品 entities and every value ever held."""
        names: dict[str, str] = {}
        for entity in self.entities.values():
            if entity.type == ITEM:
                for name in entity.names:
                    names.setdefault(name, entity.name)
        values: set[str] = set()
        for state in self.states.values():
            for key in self.rules.possession_fields:
                values.update(as_list(state.get(key)))
        for _, _, op, fname, new in self.changes:
            if fname in self.rules.possession_fields and op in ("add", "remove", "set"):
                values.update(as_list(new))
        for value in values:
            names.setdefault(value, value)
        return names

    def items_in(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, name) of every leftmost-longest item name in ``text`` (items need not be entities:
        whatever a character ever held counts)."""
        if self._items_automaton is None:
            automaton = ahocorasick.Automaton()
            for name in self.item_names:
                automaton.add_word(name, name)
            automaton.make_automaton()
            self._items_automaton = automaton
        if not self.item_names:
            return []
        return [(end - len(name) + 1, end + 1, name) for end, name in self._items_automaton.iter_long(text)]

    def item_canonical(self, name: str) -> str:
        return self.item_names.get(name, name)

    def inactive(self, status: Any) -> bool:
        """``rules.inactive``, remembered per status (a few distinct values, asked for every mention)."""
        key = status if isinstance(status, str) or status is None else repr(status)
        value = self._inactive.get(key)
        if value is None:
            value = self._inactive[key] = self.rules.inactive(status)
        return value

    def entity_of(self, name: str, *, number: int, types: tuple[str, ...] = (CHARACTER,)) -> EntityRow | None:
        """The one entity of ``types`` that ``name`` names at ``number`` (windows applied), or None."""
        key = (name, types)
        if key in self._timeless:
            return self._timeless[key]
        entries = self.matcher.names.get(name, ())
        if all(e[2] is None and e[3] is None for e in entries):
            # no window: the answer is the same in every chapter (the retcon mode asks it thousands of times)
            value = self._timeless[key] = self._entity_of(name, number=number, types=types)
            return value
        return self._entity_of(name, number=number, types=types)

    def _entity_of(self, name: str, *, number: int, types: tuple[str, ...]) -> EntityRow | None:
        if name not in self.matcher.names:
            return None
        found = {
            pk
            for pk, _, generic in self.matcher.candidates(name, number)
            if not generic and pk in self.entities and self.entities[pk].type in types
        }
        return self.entities[found.pop()] if len(found) == 1 else None

    def secret_keywords(self) -> "ahocorasick.Automaton | None":
        """One automaton of every secret's keywords (``keyword_owners``: keyword → secret indexes)."""
        if self._secret_automaton is False:
            for index, secret in enumerate(self.secrets):
                for keyword in self.keywords_of(secret):
                    self.keyword_owners.setdefault(keyword, []).append(index)
            automaton = None
            if self.keyword_owners:
                automaton = ahocorasick.Automaton()
                for keyword in self.keyword_owners:
                    automaton.add_word(keyword, keyword)
                automaton.make_automaton()
            self._secret_automaton = automaton
        return self._secret_automaton

    def told_at(self) -> list[float]:
        """Per secret (by index): the first chapter at which the reader knows it (−inf: from the start,
        inf: never) — ``reader_told`` when set, else ``reader_knows``; asked for every keyword hit."""
        if self._told_at is None:
            self._told_at = [
                float(s.reader_told_chapter)
                if s.reader_told_chapter is not None
                else (float("-inf") if s.reader_knows else float("inf"))
                for s in self.secrets
            ]
        return self._told_at

    def keywords_of(self, secret: Secret) -> list[str]:
        """The secret's usable keywords, each once, in its order."""
        keywords = self._keywords.get(secret.pk)
        if keywords is None:
            keywords = self._keywords[secret.pk] = list(
                dict.fromkeys(k for k in secret.keywords or [] if isinstance(k, str) and k.strip())
            )
        return keywords

    def windowed_names(self) -> set[str]:
        """The names that mean something in some chapters only (an alias with a window)."""
        if self._windowed is None:
            self._windowed = {
                name
                for name, entries in self.matcher.names.items()
                if any(e[2] is not None or e[3] is not None for e in entries)
            }
        return self._windowed

    def chapters_with(self, text: str) -> list[int]:
        """The numbers of the finalized chapters whose body contains ``text``, sorted (one query per text
        and canon): whether a name variant is the book's own spelling."""
        cache = self.__dict__.setdefault("_chapters_with", {})
        if text not in cache:
            rows = Chapter.objects.filter(book=self.book, body__contains=text).order_by("number")
            cache[text] = list(rows.values_list("number", flat=True))
        return cache[text]

    def known_names(self) -> set[str]:
        """Every canonical name and alias of the book (any window)."""
        if self._known is None:
            self._known = set(self.aliases) | {e.name for e in self.entities.values()}
        return self._known

    def holders(self, item: str, *, types: tuple[str, ...] = (CHARACTER,)) -> list[EntityRow]:
        """The entities of ``types`` holding ``item`` now, in the book's entity order."""
        pks = sorted(self.held_by.get(item, ()), key=self._order.__getitem__)
        return [self.entities[pk] for pk in pks if self.entities[pk].type in types]

    def first_holder(self, item: str, *, besides: int, types: tuple[str, ...] = (CHARACTER,)) -> EntityRow | None:
        """The first entity of ``types`` (in the book's entity order) other than ``besides`` holding ``item`` now."""
        pks = [pk for pk in self.held_by.get(item, ()) if pk != besides and self.entities[pk].type in types]
        return self.entities[min(pks, key=self._order.__getitem__)] if pks else None

    def held(self, pk: int) -> set[str]:
        """What entity ``pk`` holds now (kept up to date by ``advance``; do not change the set)."""
        held = self._held.get(pk)
        return held if held is not None else set()

    def _status_note(self, pk: int, state: dict[str, Any]) -> None:
        if self.inactive(state.get("status")):
            self.inactive_pks.add(pk)
        else:
            self.inactive_pks.discard(pk)

    def holdings(self, pk: int, state: dict[str, Any] | None = None) -> set[str]:
        state = self.states.get(pk, {}) if state is None else state
        held: set[str] = set()
        for key in self.rules.possession_fields:
            held.update(self.item_canonical(v) for v in as_list(state.get(key)))
        return held

    # ── state over time ─────────────────────────────────────────────────────────────────────────

    def advance(self, *, to: int) -> None:
        """Replay every change of chapters ≤ ``to`` (forward only)."""
        if to < self.as_of:
            raise ValueError("Canon.advance only moves forward")
        changes = self.changes
        while self._cursor < len(changes) and changes[self._cursor][0] <= to:
            chapter, pk, op, fname, new = changes[self._cursor]
            self._cursor += 1
            state = self.states.get(pk)
            if state is None:
                continue
            before = self.held(pk) if fname in self.rules.possession_fields else None
            op_apply(state, op=op, field=fname, value=new)
            self.last_change[(pk, fname)] = Change(chapter=chapter, op=op, value=new)
            if fname == "status":
                self._status_note(pk, state)
            if before is not None:
                after = self._held[pk] = self.holdings(pk, state)
                for item in before - after:
                    self.lost[(pk, item)] = chapter
                    self.held_by[item].discard(pk)
                for item in after - before:
                    self.lost.pop((pk, item), None)
                    self.got[(pk, item)] = chapter
                    self.held_by[item].add(pk)
        self.as_of = to

    # ── evidence ────────────────────────────────────────────────────────────────────────────────

    def _file_line(self, path: str, needle: str) -> int | None:
        # cached: the retcon mode asks the same setting file for the same key in chapter after chapter
        key = (path, needle)
        if key not in self._lines:
            self._lines[key] = self._file_line_read(path, needle)
        return self._lines[key]

    def _file_line_read(self, path: str, needle: str) -> int | None:
        if not path or self.root is None or not needle:
            return None
        try:
            data, _ = regular_file_read(self.root / path, max_bytes=EVIDENCE_FILE_MAX, root=self.root)
        except OSError:
            return None
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if needle in line:
                return number
        return None

    def state_evidence(self, entity: EntityRow, key: str, value: Any) -> dict[str, Any]:
        """Where ``entity``'s ``key`` got its current value: a chapter's tag, or the entity's file."""
        change = self.last_change.get((entity.pk, key))
        if change is None or change.chapter is None:
            line = self._file_line(entity.source_path, f"{key}:") or self._file_line(entity.source_path, str(value))
            return {"chapter": None, "file": entity.source_path, "line": line}
        return self.chapter_evidence(change.chapter, entity=entity, key=key, value=change.value)

    def holding_evidence(self, entity: EntityRow, item: str) -> dict[str, Any]:
        chapter = self.got.get((entity.pk, item))
        if chapter is None:
            key = self.rules.possession_fields[0] if self.rules.possession_fields else "possessions"
            return {"chapter": None, "file": entity.source_path, "line": self._file_line(entity.source_path, f"{key}:")}
        return self.chapter_evidence(chapter, entity=entity, value=item)

    def last_activity(self, thread_id: str) -> int:
        """The last chapter that names the thread in its front matter or its 履历 (0: none)."""
        if self._named is None:
            # the opens / advances of every chapter, read only when an abandoned thread is named (a
            # draft check otherwise decodes only ``closes``)
            self._named = defaultdict(set)
            rows = Chapter.objects.filter(book=self.book).values_list("number", "opens", "advances", "closes")
            for number, *lists in rows.iterator():
                for tid in (t for ids in lists for t in ids or []):
                    self._named[tid].add(number)
        numbers = list(self._named.get(thread_id, ()))
        thread = self.threads.get(thread_id)
        if thread is not None:
            numbers += [c for c in thread.history.values_list("chapter", flat=True) if c is not None]
            numbers += [c for c in (thread.opened_chapter,) if c is not None]
        return max(numbers, default=0)

    def tags_of(self, number: int) -> list[dict[str, Any]]:
        """A chapter's entity tags (text, line), read on first use: a draft check needs the tags of
        the few chapters its evidence cites, not the whole book's."""
        if number not in self._tags:
            value = Chapter.objects.filter(book=self.book, number=number).values_list("entity_tags", flat=True).first()
            self._tags[number] = value or []
        return self._tags[number]

    def chapter_evidence(
        self, number: int, *, entity: EntityRow | None = None, key: str = "", value: Any = None
    ) -> dict[str, Any]:
        if entity is not None and (entity.pk, number) in self.declared:
            wanted = str(value) if value is not None else None
            declared = [
                where
                for f, v, where in self.declared[(entity.pk, number)]
                if (not key or f == key) and (wanted is None or v == wanted)
            ]
            if declared:
                timeline = TIMELINE_WHERE.match(declared[0])
                if timeline:  # declared in a timeline row: its file and line
                    return {"chapter": number, "file": timeline.group(1), "line": int(timeline.group(2))}
                # declared in the entity's file: its ``changes:`` entry for that chapter
                path = entity.source_path
                line = self._file_line(path, f"chapter: {number}") or self._file_line(path, "changes:")
                return {"chapter": number, "file": path, "line": line}
        line = None
        needles = [n for n in (f'"{key}"' if key else "", str(value) if value is not None else "") if n]
        for tag in self.tags_of(number):
            text = tag.get("text", "")
            if all(n in text for n in needles):
                line = tag.get("line")
        if line is None and entity is not None:
            # the tag's operation sits under its <entity-update> head, a few lines down
            for tag in self.tags_of(number):
                if any(name in tag.get("text", "") for name in (entity.entity_id, *entity.names)):
                    line = tag.get("line")
        return {"chapter": number, "file": self.chapter_path(number), "line": line}

    def threads_planned_to_end(self, number: int) -> list[str]:
        """The threads whose ``planned_end`` (a chapter, or its volume's last chapter) is ``number``,
        in the book's thread order; worked out once per canon (asked for every chapter)."""
        if self._planned is None:
            self._planned = defaultdict(list)
            ends = dict(self.book.volumes.values_list("number", "end_chapter"))
            for tid, thread in self.threads.items():
                planned = thread.planned_end
                if planned is None and thread.planned_end_volume is not None:
                    planned = ends.get(thread.planned_end_volume)
                if planned is not None:
                    self._planned[planned].append(tid)
        return self._planned.get(number, [])

    def source_line(self, path: str, needle: str) -> int | None:
        return self._file_line(path, needle)


def as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return [str(value)] if str(value).strip() else []


WEAK_HOOK = re.compile(r"-\s*弱\s*$")
