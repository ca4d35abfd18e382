"""Small builders for entity tests (no JSON blobs)."""

from core.models import Book, Chapter
from entities.models import Alias, Entity


def book_make(slug: str = "qinglan", chapters: int = 0) -> Book:
    book = Book.objects.create(slug=slug, title="青岚剑录", root=f"/tmp/{slug}")
    Chapter.objects.bulk_create(
        [Chapter(book=book, number=n, title=f"第{n}章", body="") for n in range(1, chapters + 1)]
    )
    return book


def entity_make(book: Book, entity_id: str, name: str, type: str = "角色", aliases=(), **fields) -> Entity:
    entity = Entity.objects.create(book=book, entity_id=entity_id, canonical_name=name, type=type, **fields)
    for alias in aliases:
        Alias.objects.create(book=book, entity=entity, alias=alias)
    return entity
