"""The mention indexer wired into the rebuilder, on the demo book."""

import pytest
from django.test import override_settings

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from entities.selectors import chapter_ambiguous_mentions, entity_appearances
from tests.conftest import DEMO_BOOK

pytestmark = pytest.mark.django_db


@override_settings(WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[])
def test_rebuild_scans_mentions_of_the_demo_book():
    if not DEMO_BOOK.exists():
        pytest.skip(f"{DEMO_BOOK} is absent")
    report = book_rebuild(root=DEMO_BOOK)
    assert "entities.mentions.mentions_index" in report["indexers"]
    book = Book.objects.get(slug="demo-book")
    linfeng = entity_appearances(book=book, ref="linfeng")
    assert (linfeng["first_appearance"], linfeng["last_appearance"], len(linfeng["chapters"])) == (1, 24, 24)
    assert linfeng["chapters"][0] == {
        "chapter": 1,
        "count": 5,
        "first_offset": 14,
        "aliases": {"林风": 5},
        "sources": ["scan"],
    }
    # 白鹭 names a person and a place: reported with both candidates, never attributed.
    first = chapter_ambiguous_mentions(book=book)[0]
    assert first == {
        "chapter": 10,
        "alias": "白鹭",
        "count": 2,
        "first_offset": 305,
        "candidates": ["loc_bailuzhou", "lubailu"],
        "generic": False,
    }
    # A second rebuild gives the same rows.
    book_rebuild(root=DEMO_BOOK)
    assert entity_appearances(book=book, ref="linfeng") == linfeng
