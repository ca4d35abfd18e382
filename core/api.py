"""REST endpoints of the core that are not reads of one book: the list of books.

Every read of a book (chapters, outlines, timelines, settings, search, reports) is declared once in
``core/interfaces.py``; ``webnovel/api.py`` generates its GET operation on this router.
"""

from django.http import HttpRequest
from ninja import Router

from core import schemas, selectors

router = Router(tags=["书籍"])


@router.get("", response=list[schemas.BookOut], summary="列出所有书")
def book_list(request: HttpRequest) -> list[dict]:
    """All books on this server with their chapter count and current (highest finalized) chapter.
    A key scoped to one book sees only that book."""
    books = selectors.book_list()
    scoped_to = getattr(request.auth, "book_id", None)  # an ApiKey (a session user has no book_id)
    if scoped_to is not None:
        slug = request.auth.book.slug
        books = [b for b in books if b["slug"] == slug]
    return books
