"""Two ingestions of the same chapter at once (an agent retrying while its first POST still runs)
on PostgreSQL: the second waits for the first and replaces its rows, never writes beside them.
SQLite needs no test of its own: its IMMEDIATE transactions let one writer in at a time."""

import threading
import time

import pytest
from django.db import connection

from entities.models import Appearance, Extraction, StateChange
from entities.services.ingest import extraction_ingest
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL only (set DATABASE_URL)")

PAYLOAD = {
    "entities_appeared": [{"id": "linfeng", "mentions": ["林风", "林风", "小风"], "confidence": 0.95}],
    "state_changes": [{"entity_id": "linfeng", "field": "realm", "new": "炼气四层", "confidence": 0.9}],
    "scenes": [{"index": 1, "location": "青岚宗", "summary": "突破", "characters": ["林风"]}],
}


def test_second_ingestion_of_a_chapter_waits_and_replaces_the_first(transactional_db, settings):
    # The after-commit memory hooks are another app's (and race each other: see docs/hardening.md).
    settings.WEBNOVEL_AFTER_CHAPTER_HOOKS = []
    book = book_row_make(chapters=3)
    entity_make(book, "linfeng", "林风", aliases=["小风"])
    first_wrote = threading.Event()
    results: dict[str, object] = {}

    def slow_after_first_write(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip().upper().startswith("INSERT") and not first_wrote.is_set():
            first_wrote.set()
            time.sleep(1.0)  # the first transaction stays open with a row written
        return result

    def ingest(name: str, *, slow: bool) -> None:
        try:
            if slow:
                with connection.execute_wrapper(slow_after_first_write):
                    results[name] = extraction_ingest(book=book, number=2, payload=PAYLOAD)
            else:
                assert first_wrote.wait(timeout=30)
                results[name] = extraction_ingest(book=book, number=2, payload=PAYLOAD)
        except Exception as exc:  # noqa: BLE001 — reported by the assertion below
            results[name] = exc
        finally:
            connection.close()

    threads = [
        threading.Thread(target=ingest, args=("first",), kwargs={"slow": True}),
        threading.Thread(target=ingest, args=("second",), kwargs={"slow": False}),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    assert [type(results[k]).__name__ for k in ("first", "second")] == ["dict", "dict"]
    assert (results["first"]["replaced"], results["second"]["replaced"]) == (False, True)
    assert Extraction.objects.filter(book=book, chapter=2).count() == 1
    assert list(StateChange.objects.filter(book=book, chapter=2).values_list("seq", "new")) == [(1, "炼气四层")]
    assert list(
        Appearance.objects.filter(book=book, chapter=2, source="extraction").values_list("count", "aliases")
    ) == [(3, {"林风": 2, "小风": 1})]
