"""``sync`` / ``finalize`` report the findings a rewritten chapter gives the chapters after it
(continuity/retcon.py, plugged in by WEBNOVEL_CANON_CHANGE_REPORTERS)."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings

from bookfiles.rebuilder import book_rebuild, book_sync, chapter_finalize
from core.models import Book
from entities.models import StateChange
from tests.factories import book_folder_make, book_write, chapter_text

pytestmark = pytest.mark.django_db

INDEXERS = override_settings(
    WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
)
CHAPTER = "定稿/正文/第二卷/第{:04d}章.md"
KILLED = '林风收剑入鞘。\n<entity-update ref="剑老" type="角色" reason="剑老魂飞魄散">\n  <set field="status" value="陨落"/>\n</entity-update>\n'


@pytest.fixture
def long_book(tmp_path) -> Book:
    """The mini book grown to 120 chapters; 剑老 (alive) speaks in chapter 120."""
    root = book_folder_make(tmp_path / "mini")
    for n in range(4, 121):
        body = "林风独自走在山路上，四下无人。"
        if n == 120:
            body = "林风推开石门。\n\n剑老道：“小子，还不快走。”"
        book_write(root, CHAPTER.format(n), chapter_text(title=f"第{n}章", body=body))
    with INDEXERS:
        assert book_rebuild(root=root)["ok"]
    return Book.objects.get(slug="mini")


def _revise(book: Book, number: int, body: str) -> None:
    book_write(Path(book.root), CHAPTER.format(number), chapter_text(title=f"第{number}章", body=body))


def test_sync_after_chapter_87_kills_a_character_lists_him_speaking_in_120(long_book):
    _revise(long_book, 87, KILLED)
    out = StringIO()
    with INDEXERS:
        call_command("sync", "mini", "--json", stdout=out)
    report = json.loads(out.getvalue())
    [change] = report["canon_changes"]
    assert change["reporter"] == "continuity.retcon.canon_change_report"
    # 剑老's names reach chapter 120 only (his name is in no other later chapter)
    assert (change["from"], change["checked"], change["counts"]) == (87, 1, {"error": 1, "warning": 0, "info": 0})
    [found] = change["findings"]
    assert (found["chapter"], found["file"], found["line"], found["kind"], found["term"]) == (
        120,
        CHAPTER.format(120),
        6,
        "inactive_acts",
        "剑老",
    )
    assert found["quote"] == "剑老道：“小子，还不快走"
    assert found["evidence"]["chapter"] == 87
    assert found["evidence"]["file"] == CHAPTER.format(87)
    assert found["evidence"]["fact"] == "剑老 状态为「陨落」（截至第119章）"


def test_sync_text_says_how_many_and_lists_them(long_book):
    _revise(long_book, 87, KILLED)
    out = StringIO()
    with INDEXERS:
        call_command("sync", "mini", stdout=out)
    text = out.getvalue()
    assert "其他章节：自第87章起复查 1 章，新增矛盾 1 处（错误 1）：" in text
    assert f"第120章 {CHAPTER.format(120)}:6 [inactive_acts] 剑老 已「陨落」，却在本章行动或说话" in text
    assert f"证据：剑老 状态为「陨落」（截至第119章）（{CHAPTER.format(87)}:" in text


def test_sync_text_after_a_retcon_is_undone_lists_the_resolved_findings_and_the_canon_diff(long_book):
    _revise(long_book, 87, KILLED)
    with INDEXERS:
        book_sync(book=long_book)
    _revise(long_book, 87, "林风收剑入鞘。")  # the death taken back
    out = StringIO()
    with INDEXERS:
        call_command("sync", "mini", stdout=out)
    text = out.getvalue()
    assert "设定变化 1 处：剑老 status 陨落：删去（原在第87章）" in text
    assert "其他章节：自第87章起复查 1 章，新增矛盾 0 处" in text
    assert "消除矛盾 1 处（错误 1）：" in text
    assert f"  第120章 {CHAPTER.format(120)}:6 [inactive_acts] 剑老 已「陨落」，却在本章行动或说话" in text


def test_a_prose_edit_reports_nothing_new_and_checks_no_chapter(long_book):
    _revise(long_book, 87, "林风独自走在山路上，雨下得更大了。")
    with INDEXERS:
        report = book_sync(book=long_book)
    assert report["ok"]
    [change] = report["canon_changes"]
    assert (change["checked"], change["findings"]) == (0, [])
    assert change["skipped"] == "设定与状态没有变化，只改了正文文字"


def test_finalize_of_an_earlier_chapter_reports_and_of_the_last_checks_nothing(long_book):
    _revise(long_book, 87, KILLED)
    with INDEXERS:
        report = chapter_finalize(book=long_book, number=87)
    assert [(f["chapter"], f["kind"]) for f in report["canon_changes"][0]["findings"]] == [(120, "inactive_acts")]
    # the newest chapter: no later chapter to reach, the reporter is not even started
    _revise(long_book, 120, "剑老的遗言在林风耳边回响。")
    with INDEXERS:
        report = chapter_finalize(book=long_book, number=120)
    assert report["ok"] and report["canon_changes"] == []


def test_a_finding_already_there_before_the_change_is_not_new(long_book):
    _revise(long_book, 87, KILLED)
    with INDEXERS:
        book_sync(book=long_book)
    # a second change in chapter 90 (剑老 is 封印 now: still inactive): 120's finding was there before
    _revise(
        long_book,
        90,
        '林风拔剑。\n<entity-update ref="林风" type="角色">\n  <set field="realm" value="炼气四层"/>\n</entity-update>\n',
    )
    with INDEXERS:
        report = book_sync(book=long_book)
    [change] = report["canon_changes"]
    assert change["from"] == 90 and change["findings"] == []
    assert change["checked"] == 30  # every later chapter names 林风


def reporter_that_fails(*, book, numbers, paths):
    """A canon-change reporter whose report breaks after the write (configured by the test below)."""

    def finish():
        raise ValueError("坏掉的报告")

    return finish


def test_a_failing_reporter_is_a_warning_and_the_sync_stands(long_book):
    _revise(long_book, 87, KILLED)
    with (
        INDEXERS,
        override_settings(WEBNOVEL_CANON_CHANGE_REPORTERS=["tests.continuity.test_retcon_report.reporter_that_fails"]),
    ):
        report = book_sync(book=long_book)
    assert report["ok"] and report["canon_changes"] == []
    [warning] = [w for w in report["warnings"] if w["code"] == "canon_report_failed"]
    assert warning["message"] == (
        "设定变化对其他章节的影响未能检查（tests.continuity.test_retcon_report.reporter_that_fails）："
        "ValueError: 坏掉的报告"
    )
    # the chapter was written all the same: 剑老 is 陨落 as of chapter 87
    assert StateChange.objects.filter(book=long_book, chapter=87, field="status", new="陨落").exists()


def _sync_report(book: Book) -> dict:
    out = StringIO()
    with INDEXERS:
        call_command("sync", book.slug, "--json", stdout=out)
    [change] = json.loads(out.getvalue())["canon_changes"]
    return change


def test_undoing_a_death_lists_the_resolved_findings_and_the_canon_diff(long_book):
    _revise(long_book, 87, KILLED)
    assert _sync_report(long_book)["counts"]["error"] == 1
    _revise(long_book, 87, "林风独自走在山路上，四下无人。")
    change = _sync_report(long_book)
    assert change["counts"] == {"error": 0, "warning": 0, "info": 0}
    assert change["resolved_counts"] == {"error": 1, "warning": 0, "info": 0}
    [gone] = change["resolved"]
    assert (gone["chapter"], gone["line"], gone["kind"], gone["term"]) == (120, 6, "inactive_acts", "剑老")
    assert change["canon_diff"] == ["剑老 status 陨落：删去（原在第87章）"]


def test_moving_a_death_says_from_which_chapter_to_which(long_book):
    _revise(long_book, 87, KILLED)
    _sync_report(long_book)
    _revise(long_book, 87, "林风独自走在山路上，四下无人。")
    _revise(long_book, 50, KILLED)
    assert _sync_report(long_book)["canon_diff"] == ["剑老 status 陨落：第87章 → 第50章"]
