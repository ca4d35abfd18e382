"""The dashboard's window onto other apps' reads: the book cards are the core's one listing of books."""

import pytest

from core.models import Book, Chapter
from core.selectors import book_list
from dashboard.sources import book_cards

pytestmark = pytest.mark.django_db


def test_the_api_list_and_the_cards_are_one_listing_of_books():
    b = Book.objects.create(slug="b", title="乙书", genre="仙侠", root="/tmp/b")
    Chapter.objects.create(book=b, number=1, word_count=1200)
    Chapter.objects.create(book=b, number=3, word_count=800)
    Book.objects.create(slug="a", title="", root="/tmp/a")
    assert book_list() == [
        {"slug": "a", "title": "", "genre": "", "chapters": 0, "current_chapter": None},
        {"slug": "b", "title": "乙书", "genre": "仙侠", "chapters": 2, "current_chapter": 3},
    ]
    cards = [{k: c[k] for k in ("slug", "title", "chapters", "words", "current_chapter")} for c in book_cards()]
    assert cards == [
        {"slug": "a", "title": "a", "chapters": 0, "words": 0, "current_chapter": None},
        {"slug": "b", "title": "乙书", "chapters": 2, "words": 2000, "current_chapter": 3},
    ]
