"""Two after-chapter memory hooks of one book at once (two ingestions finishing together) on
PostgreSQL: the second waits for the first instead of inserting the same fact keys beside it (which
failed with an IntegrityError on ``uniq_memory_fact_key`` and left the memory behind). SQLite needs no
test of its own: its IMMEDIATE transactions let one writer in at a time."""

import logging
import threading
import time

import pytest
from django.db import connection

from core.models import Chapter
from memory.models import Fact
from memory.pipeline import memory_after_chapter
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL only (set DATABASE_URL)")


def test_second_memory_hook_of_a_book_waits_for_the_first(transactional_db, caplog):
    book = book_row_make(chapters=3)
    Chapter.objects.filter(book=book).update(hook_type="危机钩-强", summary="林风夜探剑冢。")
    entity_make(book, "linfeng", "林风", base_state={"realm": "炼气三层"})
    first_wrote = threading.Event()
    errors: list[str] = []

    def slow_after_first_insert(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip().upper().startswith("INSERT") and not first_wrote.is_set():
            first_wrote.set()
            time.sleep(1.0)  # the first hook's transaction stays open with facts written
        return result

    def hook(*, slow: bool) -> None:
        try:
            if slow:
                with connection.execute_wrapper(slow_after_first_insert):
                    memory_after_chapter(book=book, numbers=[1, 2, 3], removed=[])
            else:
                assert first_wrote.wait(timeout=30)
                memory_after_chapter(book=book, numbers=[1, 2, 3], removed=[])
        except Exception as exc:  # noqa: BLE001 — reported by the assertion below
            errors.append(repr(exc))
        finally:
            connection.close()

    with caplog.at_level(logging.WARNING, logger="memory.services"):
        threads = [threading.Thread(target=hook, kwargs={"slow": s}) for s in (True, False)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert errors == []
    assert [r.getMessage() for r in caplog.records if "记忆更新失败" in r.getMessage()] == []
    keys = list(Fact.objects.filter(book=book).values_list("key", flat=True))
    assert len(keys) == len(set(keys)) > 0
    # the same facts as one hook alone gives: deriving again changes nothing
    before = sorted(Fact.objects.filter(book=book).values_list("key", "status"))
    memory_after_chapter(book=book, numbers=[1, 2, 3], removed=[])
    assert sorted(Fact.objects.filter(book=book).values_list("key", "status")) == before
    assert Fact.objects.filter(book=book, origin="setting", subject="林风", field="realm").get().value == "炼气三层"
