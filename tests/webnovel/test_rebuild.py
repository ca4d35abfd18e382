"""book_rebuild on the mini fixture book (tests/webnovel/bookfactory.py): exact counts and values."""

import pytest

from entities.models import Alias, Entity
from tests.webnovel.bookfactory import book_make
from threads.models import Secret, Thread
from webnovel.models import Book, Chapter, Document, Fingerprint, SourceFile, TimelineRow, Volume
from webnovel.rebuilder import book_dump, book_rebuild

pytestmark = pytest.mark.django_db(transaction=False)


@pytest.fixture
def mini(tmp_path):
    return book_make(tmp_path / "mini")


def test_rebuild_counts(mini):
    report = book_rebuild(root=mini)
    assert report["ok"] is True
    assert report["errors"] == []
    assert report["warnings"] == []
    assert report["counts"] == {
        "chapters": 3,
        "volumes": 2,
        "threads": 2,
        "secrets": 1,
        "entities": 7,
        "aliases": 7,
        "documents": 6,
        "sections": 10,
        "timeline_rows": 2,
        "fingerprints": 3,
        "words": 59,
    }


def test_rebuild_twice_gives_identical_dump(mini):
    book_rebuild(root=mini)
    first = book_dump(book=Book.objects.get(slug="mini"))
    book_rebuild(root=mini)
    assert book_dump(book=Book.objects.get(slug="mini")) == first
