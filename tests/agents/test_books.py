"""Which folder a stdio server serves: a folder of the shipped examples is served from a copy in the data
directory, so the server's writes (journal, ``.story-system/``) never change the example of the checkout."""

import pytest
from django.test import override_settings

from agents.books import BookSource
from agents.writes import write_tools
from tests.conftest import DEMO_BOOK_SOURCE


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.django_db
def test_an_example_folder_is_served_from_a_copy_that_takes_the_writes(tmp_path):
    if not (DEMO_BOOK_SOURCE / "book.yaml").is_file():
        pytest.skip(f"demo book absent: {DEMO_BOOK_SOURCE}")
    before = _files(DEMO_BOOK_SOURCE)
    with override_settings(DATA_DIR=tmp_path):
        book = BookSource(str(DEMO_BOOK_SOURCE))()
        built = write_tools()["story-system-build"].run(book, {"query": "少年剑修", "persist": True})
    copy = tmp_path / "books" / "demo-book"
    assert (book.slug, book.root) == ("demo-book", str(copy.resolve()))
    assert built["persisted"] is True and (copy / ".story-system").is_dir()
    assert _files(DEMO_BOOK_SOURCE) == before and not (DEMO_BOOK_SOURCE / ".story-system").exists()


@pytest.mark.django_db
def test_webnovel_mcp_s_demo_is_a_copy_and_never_the_example_the_database_was_built_from(tmp_path, settings):
    from core.models import Book
    from webnovel.cli import _demo_ref

    settings.DATA_DIR = tmp_path
    assert _demo_ref(settings) == str((tmp_path / "books" / "demo-book").resolve())
    Book.objects.create(slug="demo-book", root=str(DEMO_BOOK_SOURCE))
    with pytest.raises(SystemExit) as refused:
        _demo_ref(settings)
    assert str(refused.value).startswith("webnovel-mcp：数据库中的 demo-book 建自随附示例")
    Book.objects.filter(slug="demo-book").update(root=str(tmp_path / "books" / "demo-book"))
    assert _demo_ref(settings) == "demo-book"  # a copy the database knows is served by its slug
