"""The rows of the ``character`` read in plain SQL, three round trips (``entities.selectors.character_meta``
is the read; issue 29). An agent calls it before every chapter, and building its five ORM queries was two
thirds of its time (~0.5 ms each, against ~0.05 ms for the database to answer). The SQL is the ORM's, the
values are decoded by the fields themselves (``from_db_value``), so the answer is the ORM's on every
database."""

from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Model

from core.models import Book, Chapter, Document, Section
from entities.models import Alias, Entity, StateChange


class CharacterRow(NamedTuple):
    """The columns of an entity the read answers (``_the_one`` reads ``entity_id``, ``type``, ``canonical_name``)."""

    pk: int
    entity_id: str
    type: str
    canonical_name: str
    tier: str
    description: str
    base_state: Any
    is_protagonist: bool
    source: str
    source_path: str


def _t(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _c(model: type[Model], field: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(field).column)


def _json(model: type[Model], field: str, value: Any) -> Any:
    return model._meta.get_field(field).from_db_value(value, None, connection)


def characters_named(*, book: Book, name: str) -> list[CharacterRow]:
    """The characters whose id, canonical name or alias is ``name``, in (type, id) order (``_character``'s
    query: the book inside each arm of the OR, so each arm is an index lookup)."""
    e, a = _t(Entity), _t(Alias)
    columns = ", ".join(f"e.{_c(Entity, f)}" for f in ("id", *CharacterRow._fields[1:]))
    book_id, entity_id = _c(Entity, "book"), _c(Alias, "entity")
    sql = (
        f"SELECT {columns} FROM {e} e WHERE e.{_c(Entity, 'type')} = %s AND ("
        f"(e.{book_id} = %s AND e.{_c(Entity, 'entity_id')} = %s)"
        f" OR (e.{book_id} = %s AND e.{_c(Entity, 'canonical_name')} = %s)"
        f" OR e.{_c(Entity, 'id')} IN (SELECT x.{entity_id} FROM {a} x INNER JOIN {e} y ON x.{entity_id} = y.{_c(Entity, 'id')}"
        f" WHERE x.{_c(Alias, 'alias')} = %s AND x.{_c(Alias, 'book')} = %s AND y.{book_id} = %s))"
        f" ORDER BY e.{_c(Entity, 'type')}, e.{_c(Entity, 'entity_id')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [Entity.Type.CHARACTER, book.pk, name, book.pk, name, name, book.pk, book.pk])
        rows = cursor.fetchall()
    return [
        CharacterRow(
            pk, eid, kind, canonical, tier, description, _json(Entity, "base_state", base), bool(hero), src, path
        )
        for pk, eid, kind, canonical, tier, description, base, hero, src, path in rows
    ]


def character_parts(*, book: Book, entity: CharacterRow) -> tuple[int | None, list[str | None] | None, list[str]]:
    """In one query: the book's current chapter, the headings of the entity's character card in order (None
    without a card; a None heading for a card without sections) and its aliases (unordered)."""
    d, s = _t(Document), _t(Section)
    document_id = _c(Section, "document")
    sql = (
        f"SELECT 0, MAX({_c(Chapter, 'number')}), NULL, NULL FROM {_t(Chapter)} WHERE {_c(Chapter, 'book')} = %s"
        f" UNION ALL SELECT 1, d.{_c(Document, 'id')}, s.{_c(Section, 'heading')}, s.{_c(Section, 'order')}"
        f" FROM {d} d LEFT OUTER JOIN {s} s ON d.{_c(Document, 'id')} = s.{document_id}"
        f" WHERE d.{_c(Document, 'book')} = %s AND d.{_c(Document, 'key')} = %s AND d.{_c(Document, 'kind')} = %s"
        f" UNION ALL SELECT 2, NULL, {_c(Alias, 'alias')}, NULL FROM {_t(Alias)} WHERE {_c(Alias, 'entity')} = %s"
        " ORDER BY 1, 4"
    )
    current, headings, aliases = None, None, []
    with connection.cursor() as cursor:
        cursor.execute(sql, [book.pk, book.pk, entity.canonical_name, Document.Kind.CHARACTER_CARD, entity.pk])
        for part, number, text, _ in cursor.fetchall():
            if part == 0:
                current = number
            elif part == 1:
                headings = [*(headings or []), text]
            else:
                aliases.append(text)
    return current, headings, aliases


def character_changes(*, entity: CharacterRow, chapter: int | None) -> list[dict]:
    """The entity's state changes up to ``chapter`` (all when None) in (chapter, seq, id) order, as
    ``{"chapter", "op", "field", "new"}`` (``_changes(...).values(...)``)."""
    where = f" AND {_c(StateChange, 'chapter')} <= %s" if chapter is not None else ""
    sql = (
        f"SELECT {_c(StateChange, 'chapter')}, {_c(StateChange, 'op')}, {_c(StateChange, 'field')},"
        f" {_c(StateChange, 'new')} FROM {_t(StateChange)} WHERE {_c(StateChange, 'entity')} = %s{where}"
        f" ORDER BY {_c(StateChange, 'chapter')}, {_c(StateChange, 'seq')}, {_c(StateChange, 'id')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [entity.pk, *([chapter] if chapter is not None else [])])
        rows = cursor.fetchall()
    return [
        {"chapter": number, "op": op, "field": field, "new": _json(StateChange, "new", new)}
        for number, op, field, new in rows
    ]
