"""Reads of the core (books, chapters, outlines, timelines). Each read exists once, here; the REST
endpoint and the ``story`` command are thin adapters over it."""

from django.db.models import Count, Max

from webnovel.exceptions import NotFound
from webnovel.models import Book


def book_get(*, slug: str) -> Book:
    """The book with this slug, or NotFound naming it."""
    book = Book.objects.filter(slug=slug).first()
    if book is None:
        raise NotFound(f"书籍 '{slug}' 不存在", extra={"book": slug})
    return book


def book_current_chapter(*, book: Book) -> int | None:
    """The highest finalized chapter: the 'now' that hang and accumulation times count from."""
    return book.chapters.aggregate(m=Max("number"))["m"]


def book_list() -> list[dict]:
    rows = Book.objects.annotate(n=Count("chapters"), current=Max("chapters__number")).order_by("slug")
    return [
        {"slug": b.slug, "title": b.title, "genre": b.genre, "chapters": b.n, "current_chapter": b.current}
        for b in rows
    ]
