"""A replay's run of consecutive ingestions (``bookfiles.rebuilder.journal_replay``): what the run knows of the
book (``IngestKnown``) stays true as its own events write — a chapter ingested twice, a name created by
an earlier event, an id an earlier event took — and its events are marked applied in one INSERT."""

import shutil
from pathlib import Path

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from bookfiles.rebuilder import book_dump, book_rebuild
from core.models import Book, JournalApplied
from entities.models import Entity, Extraction
from entities.services.ingest import extraction_ingest
from tests.conftest import DEMO_BOOK_SOURCE

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def folder(tmp_path) -> Path:
    if not (DEMO_BOOK_SOURCE / "book.yaml").is_file():
        pytest.skip("the demo book is absent")
    return Path(shutil.copytree(DEMO_BOOK_SOURCE, tmp_path / "demo-book", ignore=shutil.ignore_patterns(".journal")))


def _payload(chapter: int, *names: str) -> dict:
    return {
        "entities_new": [{"name": name, "type": "角色", "aliases": [f"{name}君"], "confidence": 0.9} for name in names],
        "state_changes": [],
        "relationships_new": [],
        "scenes": [{"index": 1, "location": "山门", "summary": f"第{chapter}章", "characters": list(names)}],
        "chapter_meta": {"title": f"第{chapter}章", "summary": "、".join(names)},
    }


def _book() -> Book:
    return Book.objects.get(slug="demo-book")


@override_settings(WEBNOVEL_AFTER_CHAPTER_HOOKS=[])
def test_a_run_of_ingestions_replays_as_it_was_written(folder):
    assert book_rebuild(root=folder)["ok"]
    book = _book()
    extraction_ingest(book=book, number=1, payload=_payload(1, "郭可"))  # id guoke
    extraction_ingest(book=book, number=2, payload=_payload(2, "过客"))  # same pinyin: guoke_1
    extraction_ingest(book=book, number=2, payload=_payload(2, "过客", "游僧"))  # chapter 2 again: replaced
    extraction_ingest(book=book, number=3, payload=_payload(3, "郭可"))  # an earlier event's entity, reused
    live = book_dump(book=book)
    ids = dict(Entity.objects.filter(book=book, source="extraction").values_list("canonical_name", "entity_id"))
    assert ids == {"郭可": "guoke", "过客": "guoke_1", "游僧": "youseng"}

    Book.objects.filter(slug="demo-book").delete()
    with CaptureQueriesContext(connection) as queries:
        report = book_rebuild(root=folder)
    assert report["ok"], report["errors"]
    assert report["journal"] == {"extraction.ingest": 4}
    book = _book()
    assert book_dump(book=book) == live
    assert dict(Entity.objects.filter(book=book, source="extraction").values_list("canonical_name", "entity_id")) == ids
    assert sorted(Extraction.objects.filter(book=book).values_list("chapter", flat=True)) == [1, 2, 3]
    assert sorted(JournalApplied.objects.filter(book=book).values_list("seq", flat=True)) == [1, 2, 3, 4]
    sql = [q["sql"] for q in queries.captured_queries]
    # the four marks in one INSERT; the chapters looked up once for the run, not once per event
    assert sum(s.startswith('INSERT INTO "webnovel_journalapplied"') for s in sql) == 1
    assert not [s for s in sql if '"webnovel_chapter"."number" = ' in s and "LIMIT 1" in s]
