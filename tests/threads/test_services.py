"""threads.services: the writers of threads, their history and secrets, file by file.

They take any object with the parsed file's attributes (a Protocol): these tests build plain namespaces."""

from types import SimpleNamespace

from tests.factories import book_row_make
from threads.models import Secret, Thread, ThreadHistoryEntry
from threads.services import secrets_replace, threads_replace


def thread(thread_id, path, *, title="", history=()):
    return SimpleNamespace(
        thread_id=thread_id,
        type="伏笔",
        path=path,
        title=title,
        strength="强",
        status="进行",
        opened=1,
        planned_end=20,
        planned_end_volume=None,
        closed=None,
        description="",
        closing_plan="",
        history=[SimpleNamespace(order=i, chapter=c, text=t) for i, (c, t) in enumerate(history, 1)],
        front_matter={"id": thread_id},
    )


def secret(secret_id, path):
    return SimpleNamespace(
        secret_id=secret_id,
        path=path,
        title="玉佩来历",
        known_to=[{"name": "剑老", "since": 1}],
        reader_knows=False,
        reader_told=None,
        registered=2,
        keywords=["玉佩"],
        content="",
        front_matter={},
    )


def test_threads_replace_writes_history_and_replaces_only_the_files_named(db):
    book = book_row_make()
    written = threads_replace(
        book=book,
        threads=[
            thread("伏笔-001", "线索/伏笔-001.md", title="长" * 250, history=[(1, "埋下"), (5, "推进")]),
            thread("伏笔-002", "线索/伏笔-002.md"),
        ],
    )
    assert written == 2
    assert len(Thread.objects.get(thread_id="伏笔-001").title) == 200
    assert list(
        ThreadHistoryEntry.objects.filter(thread__book=book).order_by("order").values_list("order", "chapter", "text")
    ) == [(1, 1, "埋下"), (2, 5, "推进")]
    assert threads_replace(book=book, threads=[thread("伏笔-003", "线索/伏笔-003.md")], paths=["线索/伏笔-001.md"]) == 1
    assert sorted(Thread.objects.filter(book=book).values_list("thread_id", flat=True)) == ["伏笔-002", "伏笔-003"]
    assert ThreadHistoryEntry.objects.filter(thread__book=book).count() == 0
    assert threads_replace(book=book, threads=[]) == 0
    assert Thread.objects.filter(book=book).count() == 0


def test_secrets_replace_keeps_the_secrets_of_other_files(db):
    book = book_row_make()
    assert (
        secrets_replace(book=book, secrets=[secret("信息差-001", "信息差/a.md"), secret("信息差-002", "信息差/b.md")])
        == 2
    )
    assert secrets_replace(book=book, secrets=[], paths=["信息差/a.md"]) == 0
    assert list(Secret.objects.filter(book=book).values_list("secret_id", "registered_chapter", "known_to")) == [
        ("信息差-002", 2, [{"name": "剑老", "since": 1}])
    ]
