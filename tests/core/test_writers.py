"""core.writers: the writers of the core's file-derived rows, file by file (inputs: any object with the
parsed file's attributes; these tests build plain namespaces)."""

from types import SimpleNamespace

from core import writers
from core.models import Book, Chapter, Fingerprint, SourceFile


def chapter(number, path, body="林风拔剑。"):
    return SimpleNamespace(
        number=number,
        volume=1,
        title=f"第{number}章",
        perspective="",
        story_time="",
        chapter_position="",
        hook_type="",
        mood_position="",
        summary="",
        key_chapter=False,
        opens=[],
        advances=[],
        closes=[],
        front_matter={},
        body=body,
        entity_tags=[],
        word_count=len(body),
        path=path,
        sha256=f"hash{number}",
    )


def test_chapters_replace_scopes_to_paths_and_reports_numbers_gone(db):
    book = Book.objects.create(slug="qinglan", root="/tmp/qinglan")
    one, two = "定稿/正文/第1卷/第0001章.md", "定稿/正文/第1卷/第0002章.md"
    assert writers.chapters_replace(book=book, chapters=[chapter(1, one), chapter(2, two)], baseline=(1, 1)) == (
        2,
        10,
        [],
    )
    assert list(
        Fingerprint.objects.filter(book=book).order_by("start_chapter").values_list("start_chapter", "is_baseline")
    ) == [
        (1, True),
        (2, False),
    ]
    # the file of chapter 2 now holds chapter 3: chapter 2 is gone, chapter 1 untouched
    assert writers.chapters_replace(book=book, chapters=[chapter(3, two)], paths=[two]) == (1, 5, [2])
    assert list(Chapter.objects.filter(book=book).order_by("number").values_list("number", "source_path")) == [
        (1, one),
        (3, two),
    ]
    assert sorted(Fingerprint.objects.filter(book=book).values_list("start_chapter", flat=True)) == [1, 3]


def test_source_files_replace_and_touch(db):
    book = Book.objects.create(slug="qinglan", root="/tmp/qinglan")
    info = SimpleNamespace(path="book.yaml", kind="book", sha256="abc", size=12, mtime_ns=1)
    assert writers.source_files_replace(book=book, files=[info]) == 1
    writers.source_files_touch(book=book, touched={"book.yaml": 99})
    assert list(SourceFile.objects.filter(book=book).values_list("path", "content_hash", "mtime_ns")) == [
        ("book.yaml", "abc", 99)
    ]
    assert writers.source_files_replace(book=book, files=[], paths=["book.yaml"]) == 0
    assert SourceFile.objects.filter(book=book).count() == 0
