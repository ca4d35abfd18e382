import shutil

import pytest
from django.test import override_settings

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from tests.conftest import DEMO_BOOK


@pytest.fixture
def demo(db, tmp_path) -> Book:
    """The demo book rebuilt from a private copy (waivers written by a test stay in that copy)."""
    if not DEMO_BOOK.exists():
        pytest.skip(f"{DEMO_BOOK} is absent")
    root = shutil.copytree(DEMO_BOOK, tmp_path / "demo-book")
    with override_settings(
        WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
    ):
        report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    return Book.objects.get(slug="demo-book")


def draft(body: str, **front: object) -> str:
    """A chapter file: YAML front matter (``threads`` given as a dict) + body."""
    import yaml

    head = yaml.safe_dump(front, allow_unicode=True, sort_keys=False) if front else ""
    return f"---\n{head}---\n{body}\n"
