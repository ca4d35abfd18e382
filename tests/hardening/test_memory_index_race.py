"""Several gunicorn workers build the same BM25 disk cache at once (found by bench/bench_load.py:
they shared one temporary file name, and all but the first rename failed with a logged traceback)."""

import logging
import threading

import pytest

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from memory import retrieval
from memory.pipeline import memory_refresh
from tests.conftest import DEMO_BOOK


@pytest.fixture
def demo(transactional_db):
    if not DEMO_BOOK.is_dir():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    assert book_rebuild(root=DEMO_BOOK)["ok"] is True
    book = Book.objects.get(slug="demo-book")
    memory_refresh(book=book)
    return book


def test_concurrent_builders_of_one_disk_index_all_succeed(demo, tmp_path, monkeypatch, settings, caplog):
    settings.WEBNOVEL_MEMORY_INDEX_DIR = tmp_path / "idx"
    stamps = retrieval._segment_stamps(book=demo)
    assert stamps  # the demo book has chunks to index (24 chapters: one segment)
    real_build = retrieval._segment_build
    gate = threading.Barrier(6)

    def build(*, book, number, stamp):
        segment = real_build(book=book, number=number, stamp=stamp)
        gate.wait(timeout=30)  # every thread reaches the disk write together
        return segment

    monkeypatch.setattr(retrieval, "_segment_build", build)
    errors = []

    def worker():
        try:
            retrieval.bm25_index(book=demo)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            from django.db import connection

            connection.close()

    with retrieval._lock:
        retrieval._index_cache.clear()  # nobody refills it before all six reach the barrier
    with caplog.at_level(logging.WARNING, logger=retrieval.logger.name):
        threads = [threading.Thread(target=worker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert [r.getMessage() for r in caplog.records if "检索索引缓存" in r.getMessage()] == []
    assert len(list((tmp_path / "idx").glob("*.marshal"))) == len(stamps)
    assert list((tmp_path / "idx").glob("*.tmp")) == []
