"""``memory_orphans``: the chapters whose chunks outlived the chapter (a deletion whose memory hook never
ran), found by probing the ranges outside and between the book's chapter numbers (issue 29: a finalize
must not read every chunk of a 3,000-chapter book)."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.models import Chapter
from memory import pipeline
from memory.models import Chunk
from memory.pipeline import memory_orphans


def _chunk(book, chapter, order=0):
    Chunk.objects.create(book=book, chapter=chapter, kind="scene", order=order, text=f"第{chapter}章", terms="")


def test_chunks_outside_and_between_the_chapters_are_orphans(book):
    # the book holds chapters 1–6; every chunk below 1, above 6 or in a gap is an orphan
    for n in (0, 1, 3, 6, 7, 9, 9):
        _chunk(book, n, order=Chunk.objects.filter(book=book, chapter=n).count())
    assert memory_orphans(book=book) == [0, 7, 9]
    Chapter.objects.filter(book=book, number__in=[3, 4]).delete()  # a gap 2 < … < 5
    assert memory_orphans(book=book) == [0, 3, 7, 9]
    Chapter.objects.filter(book=book, number=1).delete()  # the lowest moves up
    assert memory_orphans(book=book) == [0, 1, 3, 7, 9]


def test_a_book_without_chapters_orphans_every_chunked_chapter(book):
    _chunk(book, 2)
    _chunk(book, 5)
    Chapter.objects.filter(book=book).delete()
    assert memory_orphans(book=book) == [2, 5]


def test_many_gaps_read_every_chunk_s_chapter_once(book, monkeypatch):
    monkeypatch.setattr(pipeline, "GAPS_PROBED", 1)
    Chapter.objects.filter(book=book, number__in=[2, 4]).delete()  # two gaps
    for n in (1, 2, 4, 5, 8):
        _chunk(book, n)
    with CaptureQueriesContext(connection) as queries:
        assert memory_orphans(book=book) == [2, 4, 8]
    assert len(queries) == 3  # the span, the numbers, the chunks' chapters


def test_a_book_numbered_without_gaps_probes_two_ranges(book):
    _chunk(book, 7)
    with CaptureQueriesContext(connection) as queries:
        assert memory_orphans(book=book) == [7]
    assert len(queries) == 3  # the span, below the first chapter, above the last
