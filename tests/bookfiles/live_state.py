"""The oracle of "live equals rebuild" (issue 24): every table of one book as a multiset of rows with
no ids and no timestamps, a foreign key shown by what it points at, so the live database and a
rebuild of the same folder into an empty one compare row for row; plus ``dump_book``.

Shared by the model-based test (tests/bookfiles/test_live_equals_rebuild.py) and its long run
(bench/bench_live_rebuild.py)."""

from __future__ import annotations

import difflib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from django.apps import apps
from django.db import models

from bookfiles.rebuilder import book_dump, book_rebuild
from core.models import Book

# What identifies a row another row points at (a stable key, never a pk): the first of these fields a
# model has. A model without one is shown by all its fields.
NATURAL = ("entity_id", "thread_id", "secret_id", "key", "slug")
# Tables of a book that are not derived from its folder, each for a stated reason:
EXCLUDED = {
    "webnovel.ApiKey",  # credentials, made by `manage.py apikey`, never part of a book's content
    "memory.MemoryHit",  # the log of what context packs used: a usage log, not the book's state
}
# Columns that are not the book's state: the last command's report and when it ran.
SKIPPED = {
    "webnovel.Book": {"built_at", "build_report", "created_at"},
    # the memory pipeline's cache key: a count, the highest id and the latest time of the setting facts
    "memory.DerivationStamp": {"facts"},
}
# Keys of a JSON value that hold a database id (a held item's resolution names the item's own pk).
ID_KEYS = ("pk",)


def _no_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_ids(v) for k, v in value.items() if k not in ID_KEYS}
    if isinstance(value, list):
        return [_no_ids(v) for v in value]
    return value


def _book_models() -> list[tuple[type[models.Model], str]]:
    """(model, the lookup from it to its book) for every table that holds a book's rows."""
    found: list[tuple[type[models.Model], str]] = []
    direct = {}
    for model in apps.get_models():
        if model._meta.label in EXCLUDED or model is Book:
            continue
        for f in model._meta.concrete_fields:
            if f.is_relation and f.related_model is Book:
                direct[model] = f.name
    found = list(direct.items())
    for model in apps.get_models():
        if model in direct or model is Book or model._meta.label in EXCLUDED:
            continue
        for f in model._meta.concrete_fields:
            if f.is_relation and f.related_model in direct:
                found.append((model, f"{f.name}__{direct[f.related_model]}"))
                break
    return sorted(found, key=lambda pair: pair[0]._meta.label)


def _plain(value: Any) -> Any:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class _Shower:
    """Rows as text, a foreign key replaced by the natural key (or all the fields) of its target."""

    def __init__(self) -> None:
        self.cache: dict[tuple[str, int], str] = {}
        # rows already read (every table of the book is read once, whole), so that a foreign key to
        # one of them costs no query: (label, pk) → the row's values
        self.rows: dict[tuple[str, int], dict[str, Any]] = {}

    def keep(self, model: type[models.Model], rows: list[dict[str, Any]]) -> None:
        attname = model._meta.pk.attname
        label = model._meta.label
        for row in rows:
            self.rows[(label, row[attname])] = row

    def fields(self, model: type[models.Model]) -> list[models.Field]:
        skipped = SKIPPED.get(model._meta.label, set())
        return [
            f
            for f in model._meta.concrete_fields
            if not f.primary_key
            and f.name not in skipped
            and not isinstance(f, models.DateTimeField)
            and not (f.is_relation and f.related_model is Book)
        ]

    def ref(self, model: type[models.Model], pk: int | None) -> str | None:
        if pk is None:
            return None
        key = (model._meta.label, pk)
        if key not in self.cache:
            self.cache[key] = ""  # a cycle shows as empty rather than recursing
            row = self.rows.get(key)
            if row is None:
                row = model.objects.filter(pk=pk).values().first()
            self.cache[key] = self.show(model, row) if row is not None else "<gone>"
        return self.cache[key]

    def show(self, model: type[models.Model], row: dict[str, Any]) -> str:
        natural = next((n for n in NATURAL if n in row), None)
        if natural is not None and model is not Book:
            return f"{model.__name__}:{row[natural]}"
        out = {}
        for f in self.fields(model):
            if f.is_relation:
                out[f.name] = self.ref(f.related_model, row[f.attname])
            else:
                out[f.name] = row[f.attname]
        return _plain(out)

    def full(self, model: type[models.Model], row: dict[str, Any]) -> str:
        out = {}
        for f in self.fields(model):
            out[f.name] = self.ref(f.related_model, row[f.attname]) if f.is_relation else _no_ids(row[f.attname])
        return _plain(out)


def book_tables(*, book: Book) -> dict[str, Counter]:
    """Every table of ``book``: label → multiset of its rows as text."""
    shower = _Shower()
    tables: dict[str, Counter] = {}
    row = Book.objects.filter(pk=book.pk).values().first()
    tables["webnovel.Book"] = Counter([shower.full(Book, row)])
    read = [(model, list(model.objects.filter(**{lookup: book.pk}).values())) for model, lookup in _book_models()]
    for model, rows in read:
        shower.keep(model, rows)
    for model, rows in read:
        tables[model._meta.label] = Counter(shower.full(model, r) for r in rows)
    return tables


def tables_diff(live: dict[str, Counter], other: dict[str, Counter], *, limit: int = 4) -> list[str]:
    """What differs, table by table: rows only live (``-``) and only in the other (``+``)."""
    out = []
    for label in sorted(set(live) | set(other)):
        a, b = live.get(label, Counter()), other.get(label, Counter())
        if a == b:
            continue
        only_a, only_b = list((a - b).elements()), list((b - a).elements())
        out.append(f"{label}: {len(only_a)} row(s) only live, {len(only_b)} only after")
        out += [f"  - {r[:400]}" for r in sorted(only_a)[:limit]]
        out += [f"  + {r[:400]}" for r in sorted(only_b)[:limit]]
    return out


def live_and_rebuild(
    *, slug: str, root: Path, before: dict[str, Counter] | None = None, dump_before: str | None = None
) -> tuple[list[str], list[str]]:
    """Compare the live book with a rebuild of ``root`` into an empty database: (table differences,
    dump differences). The rebuilt book replaces the live one (equal, when the lists are empty). The
    caller must not hold a transaction: the rebuild's after-commit hooks (memory) must run. ``before``
    and ``dump_before``: the live book's tables and dump, when the caller has just read them."""
    book = Book.objects.get(slug=slug)
    before = book_tables(book=book) if before is None else before
    dump_before = book_dump(book=book) if dump_before is None else dump_before
    Book.objects.filter(pk=book.pk).delete()
    report = book_rebuild(root=root)
    if not report["ok"]:
        return [f"rebuild failed: {report['errors']}"], []
    book = Book.objects.get(slug=slug)
    after, dump_after = book_tables(book=book), book_dump(book=book)
    dump_diff = [] if dump_after == dump_before else _lines_diff(dump_before, dump_after)
    return tables_diff(before, after), dump_diff


def _lines_diff(a: str, b: str, limit: int = 12) -> list[str]:
    return list(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0))[:limit]
