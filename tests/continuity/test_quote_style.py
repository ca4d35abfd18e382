"""quote_style learns from the book's own text: a mark the finalized chapters never use is a breach per
line (warning); one a minority of them use is a mixed convention (one info for the chapter); one most
of them use is the book's own (nothing). And a speech over several paragraphs stays one quotation."""

import shutil
from pathlib import Path

import pytest
from django.test import override_settings

from bookfiles.rebuilder import book_rebuild
from continuity.draft import draft_parse
from continuity.selectors import draft_check
from core.models import Book
from tests.conftest import DEMO_BOOK
from tests.continuity.conftest import draft

pytestmark = pytest.mark.django_db

DRAFT = "「走吧。」她说。\n林风点头。\n「快走！」沈墨道，「天要黑了。」"


def _demo_with_corner_quotes(tmp_path: Path, chapters: int) -> Book:
    """The demo book with the dialogue of its first ``chapters`` chapters in 「」 instead of “”."""
    if not DEMO_BOOK.exists():
        pytest.skip(f"{DEMO_BOOK} is absent")
    root = shutil.copytree(DEMO_BOOK, tmp_path / "demo-book")
    for path in sorted((root / "定稿" / "正文").rglob("第*章.md"))[:chapters]:
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("“", "「").replace("”", "」"), encoding="utf-8")
    with override_settings(
        WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
    ):
        report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    return Book.objects.get(slug="demo-book")


def _quote_findings(book: Book) -> list[tuple[int, str, str]]:
    result = draft_check(book=book, text=draft(DRAFT, chapter=25))
    return [(f["line"], f["severity"], f["message"]) for f in result["findings"] if f["kind"] == "quote_style"]


def test_a_mark_the_book_never_uses_is_a_warning_per_line(tmp_path):
    book = _demo_with_corner_quotes(tmp_path, 0)
    assert [(line, severity) for line, severity, _ in _quote_findings(book)] == [(4, "warning"), (6, "warning")]


def test_a_mark_a_minority_of_the_chapters_use_is_one_info(tmp_path):
    book = _demo_with_corner_quotes(tmp_path, 3)  # 3 of 24 chapters
    assert _quote_findings(book) == [
        (
            4,
            "info",
            "本章 2 行用了 「」 引号 3 处（第 4、6 行），文风规定为 “”；本书前文 3/24 章也这样用，引号体例不一",
        )
    ]


def test_a_mark_most_chapters_use_is_the_books_own(tmp_path):
    book = _demo_with_corner_quotes(tmp_path, 12)  # half of the 24 chapters
    assert _quote_findings(book) == []


def test_a_speech_over_two_paragraphs_is_one_quotation_a_narrated_paragraph_between_ends_it():
    text = draft("林风道：“你听我说。\n那年‘青岚’二字，我至今记得。”苏晚晴不语。\n沈墨道：“走")
    parsed = draft_parse(text)
    prose = parsed.prose
    inside = [parsed.in_quote(prose.index(word)) for word in ("你听", "青岚", "至今", "苏晚晴", "走")]
    assert inside == [True, True, True, False, True]
    # an unmarked paragraph between: the speech ended at its paragraph (the closing mark is a slip)
    broken = draft_parse(draft("林风道：“你听我说。\n沈墨点头。\n我至今记得。”"))
    assert [broken.in_quote(broken.prose.index(w)) for w in ("你听", "沈墨", "至今")] == [True, False, False]


def test_nested_marks_in_the_continued_paragraph_are_the_standard_nesting(demo):
    text = draft("林风道：“你听我说。\n那年师父说‘剑在人在’，我至今记得。”苏晚晴不语。", chapter=25)
    result = draft_check(book=demo, text=text)
    assert [f for f in result["findings"] if f["kind"] == "quote_style"] == []
    # without the closing mark the second paragraph is narration: its ‘’ breaks the declared style
    broken = draft_check(book=demo, text=text.replace("记得。”", "记得。"))
    assert [(f["line"], f["severity"]) for f in broken["findings"] if f["kind"] == "quote_style"] == [(5, "warning")]
