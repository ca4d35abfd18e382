"""What ``chunks_index`` returns: the book's chunk count on a full pass, else how many chapters it
remade (a finalize / sync must not count every chunk of a 3,000-chapter book, issue 29)."""

from core.models import Chapter
from memory.models import Chunk
from memory.retrieval import chunks_index


def _hash(book, number, value):
    Chapter.objects.filter(book=book, number=number).update(content_hash=value * 40)


def test_full_pass_counts_the_books_chunks(book):
    for n in range(1, 7):
        _hash(book, n, str(n))
    total = chunks_index(book=book, chapters=list(range(1, 7)), full=True)
    assert total == Chunk.objects.filter(book=book).count() == 12  # a summary and one scene per chapter
    assert sorted(set(Chunk.objects.filter(book=book).values_list("chapter", flat=True))) == [1, 2, 3, 4, 5, 6]


def test_partial_pass_counts_the_chapters_remade(book):
    for n in range(1, 7):
        _hash(book, n, str(n))
    chunks_index(book=book, chapters=list(range(1, 7)), full=True)
    assert chunks_index(book=book, chapters=[3]) == 0  # unchanged since its chunks were made
    _hash(book, 3, "a")
    assert chunks_index(book=book, chapters=[2, 3]) == 1  # only chapter 3 changed
    assert chunks_index(book=book, chapters=[2, 3]) == 0
    Chapter.objects.filter(book=book, number=5).update(summary="第5章换了摘要", content_hash="b" * 40)
    assert chunks_index(book=book, chapters=[5]) == 1
    assert Chunk.objects.filter(book=book, chapter=5, kind="summary").get().text == "第5章换了摘要"
    assert Chunk.objects.filter(book=book).count() == 12
