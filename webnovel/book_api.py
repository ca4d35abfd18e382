"""REST endpoints of the core: books, chapters, outlines, timelines, search, reports."""

from django.http import HttpRequest
from ninja import Router, Schema

from webnovel import selectors

router = Router(tags=["书籍"])


class BookOut(Schema):
    slug: str
    title: str
    genre: str
    chapters: int
    current_chapter: int | None


@router.get("", response=list[BookOut], summary="列出所有书")
def book_list(request: HttpRequest) -> list[dict]:
    """All books on this server with their chapter count and current (highest finalized) chapter."""
    return selectors.book_list()
