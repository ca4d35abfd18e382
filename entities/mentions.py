"""Mentions: a deterministic scan of chapter text for every name of the book's entities in one pass.

Why Aho–Corasick (pyahocorasick): Chinese has no word boundaries, so "whole word" matching is
meaningless and a loop of ``str.count`` per alias is O(aliases × text). One automaton over every
canonical name and alias finds all of them in a single pass over the text.

Semantics (documented in docs/entities.md):

- Leftmost-longest, non-overlapping: where names nest (孙悟空 ⊃ 悟空, 齐天大圣 ⊃ 大圣) the longest
  name starting at the leftmost position wins, and the characters it covers are not matched again.
  So a text "孙悟空" is one mention of the name 孙悟空, not also one of 悟空. The per-alias counts of a
  plain substring scan are the longest-match counts plus the occurrences swallowed by a longer name
  (``alias_counts_all`` gives the plain counts, ``alias_counts_longest`` the attributed ones).
- A name that names several entities (valid at that chapter) is ambiguous: it is reported in
  ``AmbiguousMention`` with its candidates and never attributed. A name whose only entity is outside
  its validity window (林宗主 before chapter 80) is not attributed either.
- A generic alias (他, 老爷, 那个少年: ``Alias.generic``) is a weak mention: it is reported in
  ``AmbiguousMention`` with ``generic=True`` and its candidates (even a single one) and never counted
  as an appearance, so it never sets a first appearance. A name that is generic for one entity and a
  plain name of another is weak too: which one the text means is not ours to guess.
- The title and the body of a chapter are scanned; ``first_offset`` is a character offset into the
  body (None when the entity is only named in the title).

The scan is a function of the chapters' text and the book's current names, not of the order of the
writes: a write that changes names (``mentions_names_before`` / ``mentions_names_after``) rescans
every chapter where a changed name occurs, and ``mentions_follow`` defers that to the end of a block
(a journal replay of thousands of ingestions rescans once).

The automaton is built once per process per alias-set version and cached; saving or deleting an
Entity or Alias bumps the version (``entities.signals``), and a cheap database fingerprint (count
and highest id of names) catches writes from other processes.
"""

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import ahocorasick
from django.db import transaction
from django.db.models import Count, Max

from core.models import Book, Chapter
from core.search import search_chapters_containing
from entities.models import Alias, AmbiguousMention, Appearance, Entity, TagApplication
from entities.services.writes import entity_appearance_refresh
from entities.tags import chapter_tags_apply, chapter_tags_clear
from kernel.bulk import rows_insert

FLUSH_ROWS = 5000

# name → [(entity pk, entity_id, valid_from, valid_to, generic)]
Names = dict[str, list[tuple[int, str, int | None, int | None, bool]]]


@dataclass
class Matcher:
    automaton: ahocorasick.Automaton | None
    names: Names
    windowed: bool  # some name has a validity window: resolution depends on the chapter

    def longest(self, text: str) -> Iterable[tuple[int, str]]:
        """(start offset, name) of every leftmost-longest non-overlapping match."""
        if self.automaton is None or not text:
            return
        for end, name in self.automaton.iter_long(text):
            yield end - len(name) + 1, name

    def candidates(self, name: str, number: int | None) -> list[tuple[int, str, bool]]:
        """(pk, entity_id, generic) of every entity the name may mean at ``number``."""
        out = []
        for pk, entity_id, valid_from, valid_to, generic in self.names[name]:
            if number is not None and (
                (valid_from is not None and number < valid_from) or (valid_to is not None and number > valid_to)
            ):
                continue
            out.append((pk, entity_id, generic))
        return out


_cache: dict[int, tuple[tuple, Matcher]] = {}
_names_cache: dict[int, tuple[tuple, Names]] = {}  # the names alone, as a follow-up last loaded them
_versions: dict[int, int] = defaultdict(int)
_lock = threading.Lock()


def matcher_invalidate(*, book_id: int) -> None:
    """Forget the cached automaton of a book (called on Entity / Alias save and delete)."""
    with _lock:
        _versions[book_id] += 1
        _cache.pop(book_id, None)
        _names_cache.pop(book_id, None)


def _fingerprint(book: Book) -> tuple:
    a = Alias.objects.filter(book=book).aggregate(n=Count("id"), m=Max("id"))
    e = Entity.objects.filter(book=book).aggregate(n=Count("id"), m=Max("id"))
    return (_versions[book.pk], a["n"], a["m"], e["n"], e["m"])


def names_load(*, book: Book) -> Names:
    names: Names = defaultdict(list)
    for pk, entity_id, name in (
        Entity.objects.filter(book=book).order_by().values_list("pk", "entity_id", "canonical_name")
    ):
        names[name].append((pk, entity_id, None, None, False))
    for pk, entity_id, name, valid_from, valid_to, generic in (
        Alias.objects.filter(book=book)
        .order_by()
        .values_list("entity_id", "entity__entity_id", "alias", "valid_from", "valid_to", "generic")
    ):
        entries = names[name]
        # An alias equal to the canonical name (or repeated) adds nothing unless it narrows a window.
        if any(e[0] == pk and e[2] is None and e[3] is None for e in entries):
            continue
        entries.append((pk, entity_id, valid_from, valid_to, generic))
    return dict(names)


def matcher_build(names: Names) -> Matcher:
    automaton = None
    if names:
        automaton = ahocorasick.Automaton()
        for name in names:
            automaton.add_word(name, name)
        automaton.make_automaton()
    windowed = any(e[2] is not None or e[3] is not None for entries in names.values() for e in entries)
    return Matcher(automaton=automaton, names=names, windowed=windowed)


def matcher_get(*, book: Book) -> Matcher:
    """The cached matcher of the book (rebuilt when its names changed)."""
    key = _fingerprint(book)
    cached = _cache.get(book.pk)
    if cached is not None and cached[0] == key:
        return cached[1]
    matcher = matcher_build(names_load(book=book))
    with _lock:
        _cache[book.pk] = (key, matcher)
    return matcher


@dataclass
class ChapterScan:
    """What one chapter's scan found."""

    entities: dict[int, dict] = field(default_factory=dict)  # pk → {count, first_offset, aliases}
    ambiguous: dict[str, dict] = field(default_factory=dict)  # name → {count, first_offset, candidates, generic}
    unattributed: dict[str, int] = field(default_factory=dict)  # names outside their validity window


def _name_counts(automaton: ahocorasick.Automaton | None, text: str) -> tuple[dict[str, int], dict[str, int]]:
    """Leftmost-longest counts and first start offset of every name in ``text``. This is the hot
    loop (one iteration per mention), so it does the least possible per match."""
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    if automaton is None or not text:
        return counts, first
    get = counts.get
    for end, name in automaton.iter_long(text):
        n = get(name)
        if n is None:
            counts[name] = 1
            first[name] = end - len(name) + 1
        else:
            counts[name] = n + 1
    return counts, first


def chapter_scan(*, matcher: Matcher, number: int | None, body: str, title: str = "") -> ChapterScan:
    """Scan one chapter's title and body (pure: no database access)."""
    scan = ChapterScan()
    body_counts, body_first = _name_counts(matcher.automaton, body)
    title_counts, _ = _name_counts(matcher.automaton, title)
    for name in title_counts.keys() | body_counts.keys():
        count = title_counts.get(name, 0) + body_counts.get(name, 0)
        offset = body_first.get(name)
        candidates = matcher.candidates(name, number)
        generic = any(c[2] for c in candidates)
        if len(candidates) == 1 and not generic:
            pk = candidates[0][0]
            hit = scan.entities.get(pk)
            if hit is None:
                hit = scan.entities[pk] = {"count": 0, "first_offset": None, "aliases": {}}
            hit["count"] += count
            hit["aliases"][name] = count
            if offset is not None and (hit["first_offset"] is None or offset < hit["first_offset"]):
                hit["first_offset"] = offset
        elif candidates:
            scan.ambiguous[name] = {
                "count": count,
                "first_offset": offset,
                "candidates": sorted(c[1] for c in candidates),
                "generic": generic,
            }
        else:
            scan.unattributed[name] = count
    for hit in scan.entities.values():
        hit["aliases"] = dict(sorted(hit["aliases"].items()))
    return scan


def alias_counts_longest(*, matcher: Matcher, text: str) -> dict[str, int]:
    """Leftmost-longest match count of every name in ``text``."""
    counts: dict[str, int] = defaultdict(int)
    for _, name in matcher.longest(text):
        counts[name] += 1
    return dict(counts)


def alias_counts_all(*, matcher: Matcher, text: str) -> dict[str, int]:
    """Plain substring count of every name in ``text`` (all occurrences, nested ones included)."""
    counts: dict[str, int] = defaultdict(int)
    if matcher.automaton is not None:
        for _, name in matcher.automaton.iter(text):
            counts[name] += 1
    return dict(counts)


def _tag_named(*, book: Book, numbers: list[int]) -> set[int]:
    """The pks of the entities the applied tags of chapters ``numbers`` name (``TagApplication``)."""
    ids = {
        item.split(":", 1)[1]
        for applied in TagApplication.objects.filter(book=book, chapter__in=numbers).values_list("applied", flat=True)
        for item in applied
        if isinstance(item, str) and item.startswith("entity:")
    }
    return set(Entity.objects.filter(book=book, entity_id__in=ids).values_list("pk", flat=True)) if ids else set()


@transaction.atomic
def mentions_index(*, book: Book, numbers: list[int] | None, removed: list[int] | None = None) -> dict[str, int]:
    """The chapter indexer (registered in ``EntitiesConfig.ready()``, kernel/indexing.py): apply the
    manual tags of the changed chapters, then rescan them and refresh first/last appearances.
    ``numbers=None`` = every chapter. ``warnings`` are the skipped or partly applied tags, for the
    finalize / sync / rebuild report."""
    removed = list(removed or [])
    chapters = Chapter.objects.filter(book=book)
    # the entities the tags of these chapters named before: their first / last appearances move too
    tag_named = _tag_named(book=book, numbers=[*numbers, *removed]) if numbers is not None else set()
    if numbers is not None:
        chapters = chapters.filter(number__in=numbers)
    if removed:
        chapter_tags_clear(book=book, number=None, numbers=removed)
    tagged = chapters.exclude(entity_tags=[]).only("number", "entity_tags", "source_path").order_by("number")
    if numbers is None:
        # A full rebuild: tags of chapters that no longer carry any are cleared too.
        chapter_tags_clear(book=book, number=None, keep=set(tagged.values_list("number", flat=True)))
    elif untagged := set(numbers) - set(tagged.values_list("number", flat=True)):
        chapter_tags_clear(book=book, number=None, numbers=untagged)
    warnings: list[dict] = []
    # A tag may give a name (an alias another entity has, a new entity): the other chapters where the
    # names that changed occur are rescanned too, as a scan of every chapter (a rebuild) gives them.
    before = mentions_names_before(book=book) if numbers is not None and tagged.exists() else None
    for chapter in tagged:
        result = chapter_tags_apply(book=book, number=chapter.number, tags=chapter.entity_tags)
        warnings += [_tag_warning(chapter, issue) for issue in result["issues"]]
    if before is not None:
        after = names_load(book=book)
        with _lock:
            _names_cache[book.pk] = (_fingerprint(book), after)
        others = set(chapters_naming(book=book, names=names_changed(before, after))) - set(numbers)
        if others:
            numbers = sorted(set(numbers) | others)
            chapters = Chapter.objects.filter(book=book, number__in=numbers)

    stale = Appearance.objects.filter(book=book, source=Appearance.Source.SCAN)
    ambiguous_stale = AmbiguousMention.objects.filter(book=book)
    if numbers is not None:
        touched = set(numbers) | set(removed)
        stale = stale.filter(chapter__in=touched)
        ambiguous_stale = ambiguous_stale.filter(chapter__in=touched)
    affected = set(stale.values_list("entity_id", flat=True))
    stale.delete()
    ambiguous_stale.delete()

    matcher = matcher_get(book=book)
    written = 0
    appearances: list[dict] = []
    ambiguous: list[dict] = []
    for number, title, body in (
        chapters.order_by("number").values_list("number", "title", "body").iterator(chunk_size=200)
    ):
        scan = chapter_scan(matcher=matcher, number=number, body=body, title=title)
        for pk, hit in scan.entities.items():
            appearances.append(
                {
                    "book_id": book.pk,
                    "entity_id": pk,
                    "chapter": number,
                    "count": hit["count"],
                    "first_offset": hit["first_offset"],
                    "aliases": hit["aliases"],
                    "source": Appearance.Source.SCAN.value,
                }
            )
            affected.add(pk)
        for name, hit in scan.ambiguous.items():
            ambiguous.append({"book_id": book.pk, "chapter": number, "alias": name, **hit})
        if len(appearances) >= FLUSH_ROWS:  # bounded memory on a full rebuild of a long book
            written += rows_insert(Appearance, appearances)
            appearances = []
    written += rows_insert(Appearance, appearances)
    rows_insert(AmbiguousMention, ambiguous)
    if numbers is None:
        affected |= set(Entity.objects.filter(book=book).values_list("pk", flat=True))
    else:  # and the ones they name now
        affected |= tag_named | _tag_named(book=book, numbers=[*numbers, *removed])
    entity_appearance_refresh(entity_pks=affected)
    return {"appearances": written, "ambiguous": len(ambiguous), "warnings": warnings}


# --- names that change: rescan where they occur ---------------------------------------------------

_following: ContextVar[frozenset[int]] = ContextVar("mentions_following", default=frozenset())


def names_current(*, book: Book) -> Names:
    """The book's names as the database holds them now (the cached matcher's when it is fresh)."""
    key = _fingerprint(book)
    for cache in (_cache, _names_cache):
        cached = cache.get(book.pk)
        if cached is not None and cached[0] == key:
            return cached[1].names if isinstance(cached[1], Matcher) else cached[1]
    names = names_load(book=book)
    with _lock:
        _names_cache[book.pk] = (key, names)
    return names


def names_changed(before: Names, after: Names) -> set[str]:
    """The names whose entities, windows or generic marks differ (added and removed ones included)."""
    return {
        name for name in before.keys() | after.keys() if Counter(before.get(name, ())) != Counter(after.get(name, ()))
    }


def chapters_naming(*, book: Book, names: set[str]) -> list[int]:
    """The chapters whose title or body contains one of ``names`` (a plain substring: a superset of
    where the scan can match them, which is all a rescan needs). The bodies are looked up in the
    search index (``core.search``: a trigram index, milliseconds on thousands of chapters) when it is
    current; otherwise, and for the titles, they are read and matched with one automaton."""
    if not names:
        return []
    automaton = ahocorasick.Automaton()
    for name in names:
        automaton.add_word(name, name)
    automaton.make_automaton()
    chapters = Chapter.objects.filter(book=book).order_by("number")
    indexed = search_chapters_containing(book=book, terms=names)
    if indexed is None:
        rows = chapters.values_list("number", "title", "body").iterator(chunk_size=200)
    else:
        rows = ((number, title, "") for number, title in chapters.values_list("number", "title"))
    found = set(indexed or ())
    for number, title, body in rows:
        if next(automaton.iter(title), None) is not None or next(automaton.iter(body), None) is not None:
            found.add(number)
    return sorted(found)


def mentions_names_before(*, book: Book) -> Names | None:
    """The names before a write that may change them, for ``mentions_names_after``; None inside
    ``mentions_follow`` (the outer block rescans once, at its end)."""
    if book.pk in _following.get():
        return None
    return names_current(book=book)


def mentions_names_after(*, book: Book, before: Names | None) -> list[int]:
    """Rescan the chapters where a name changed since ``before`` (added, removed, re-pointed, its window
    or generic mark changed), so the scan stays what a full scan with the book's current names gives:
    a chapter that contains none of those names scans the same with either name set. Returns the
    chapters rescanned."""
    if before is None:
        return []
    key = _fingerprint(book)
    after = names_load(book=book)
    with _lock:
        _names_cache[book.pk] = (key, after)
    numbers = chapters_naming(book=book, names=names_changed(before, after))
    if numbers:
        mentions_index(book=book, numbers=numbers, removed=[])
    return numbers


@contextmanager
def mentions_follow(*, book: Book) -> Iterator[None]:
    """Writes inside the block that change names do not rescan one by one: the block's end rescans the
    chapters where a name changed, once (a journal replay of thousands of ingestions)."""
    before = mentions_names_before(book=book)
    token = _following.set(_following.get() | {book.pk})
    try:
        yield
    finally:
        _following.reset(token)
    mentions_names_after(book=book, before=before)


def _tag_warning(chapter: Chapter, issue: dict) -> dict:
    """A skipped or partly applied tag as a rebuild / finalize / sync report warning."""
    text = " ".join(issue.get("text", "").split())
    text = text if len(text) <= 80 else text[:79] + "…"
    partial = issue.get("partial")
    return {
        "code": "entity_tag_partial" if partial else "entity_tag_skipped",
        "file": chapter.source_path or f"第{chapter.number}章",
        "line": issue.get("line"),
        "message": f"第{chapter.number}章实体标签{'部分应用' if partial else '已跳过'}：{issue['message']}  {text}",
        "level": "warning",
    }
