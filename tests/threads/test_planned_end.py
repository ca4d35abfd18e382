"""``planned_end`` as the seed allows it (seed 002 §1.2: "第7卷 或 章号"): a volume's last chapter
(book.yaml) is the planned end; a volume not yet written says so and is never overdue by its plan."""

import pytest

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from tests.factories import book_folder_make
from threads.models import Thread
from threads.selectors import thread_hangs

pytestmark = pytest.mark.django_db


def _thread(tid: str, planned_end: str, *, strength: str = "中", opened: int = 1) -> str:
    return (
        f"---\nid: {tid}\ntitle: {tid}标题\nstrength: {strength}\nstatus: 进行\nopened: {opened}\n"
        f"planned_end: {planned_end}\n---\n## 描述\n{tid}的描述。\n"
    )


@pytest.fixture
def book(tmp_path, db):
    root = book_folder_make(
        tmp_path / "mini",
        {
            "线索/伏笔-002.md": _thread("伏笔-002", "第1卷", opened=2),  # volume 1 is chapters 1–2
            "线索/伏笔-003.md": _thread("伏笔-003", "第七卷", strength="高"),  # no such volume in book.yaml
            "线索/伏笔-004.md": _thread("伏笔-004", "第2卷"),  # chapters 3–4: chapter 3 is not past it
            "线索/伏笔-005.md": _thread("伏笔-005", "第40章"),
            "线索/伏笔-006.md": _thread("伏笔-006", "第甲卷"),
        },
    )
    report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    return Book.objects.get(slug="mini"), report


def test_planned_end_volume_is_stored_as_written(book):
    _, report = book
    stored = {t.thread_id: (t.planned_end, t.planned_end_volume) for t in Thread.objects.order_by("thread_id")}
    assert stored == {
        "伏笔-001": (40, None),
        "伏笔-002": (None, 1),
        "伏笔-003": (None, 7),
        "伏笔-004": (None, 2),
        "伏笔-005": (40, None),
        "伏笔-006": (None, None),
        "悬念-001": (None, None),
    }
    # A 高 thread planned by volume has a planned end; a value that is neither is named, with its line.
    codes = [(w["code"], w["file"], w["line"]) for w in report["warnings"]]
    assert ("missing_planned_end", "线索/伏笔-003.md", 4) not in codes
    assert ("invalid_value", "线索/伏笔-006.md", 7) in codes
    bad = next(w for w in report["warnings"] if w["file"] == "线索/伏笔-006.md")
    assert bad["message"] == "字段 planned_end 应为章节号或「第N卷」，实际为 '第甲卷'"


def test_overdue_uses_the_volume_last_chapter(book, api):
    book, _ = book
    rows = thread_hangs(book=book)["threads"]
    assert rows["伏笔-002"]["planned_end_chapter"] == 2
    assert (rows["伏笔-002"]["past_planned_end"], rows["伏笔-002"]["overdue"]) == (True, True)
    assert rows["伏笔-002"]["overdue_reason"] == "已超过计划收尾章（第2章）"
    assert (rows["伏笔-004"]["planned_end_chapter"], rows["伏笔-004"]["overdue"]) == (4, False)
    unwritten = rows["伏笔-003"]
    assert (unwritten["planned_end_chapter"], unwritten["overdue"]) == (None, False)
    assert unwritten["planned_end_note"] == "计划收尾于第7卷，该卷尚未写到（book.yaml 没有它的章节范围），不计超期"
    overdue = api.get("/api/books/mini/threads/overdue").json()["threads"]
    assert [(t["id"], t["planned_end_chapter"], t["overdue_reason"]) for t in overdue] == [
        ("伏笔-002", 2, "已超过计划收尾章（第2章）")
    ]
    basics = api.get("/api/books/mini/threads/伏笔-003").json()
    assert (basics["planned_end"], basics["planned_end_volume"], basics["planned_end_note"]) == (
        None,
        7,
        unwritten["planned_end_note"],
    )
    assert basics["planned_end_written"] == "第7卷"  # issue 31: one field says what the author wrote


def test_a_volume_known_only_from_its_folder_ends_once_the_next_one_begins(tmp_path, db):
    # No volumes: in book.yaml; the chapter folders 第1卷 (1–2) and 第二卷 (3) make the volumes.
    root = book_folder_make(
        tmp_path / "folders",
        {
            "book.yaml": "slug: folders\ntitle: 青岚剑录\n",
            "线索/伏笔-002.md": _thread("伏笔-002", "第1卷"),
            "线索/伏笔-003.md": _thread("伏笔-003", "第2卷"),
        },
    )
    assert book_rebuild(root=root)["ok"]
    rows = thread_hangs(book=Book.objects.get(slug="folders"))["threads"]
    assert (rows["伏笔-002"]["planned_end_chapter"], rows["伏笔-002"]["overdue_reason"]) == (
        2,
        "已超过计划收尾章（第2章）",
    )
    assert (rows["伏笔-003"]["planned_end_chapter"], rows["伏笔-003"]["overdue"]) == (None, False)
    assert (
        rows["伏笔-003"]["planned_end_note"] == "计划收尾于第2卷，该卷尚未写完（book.yaml 没有它的章节范围），不计超期"
    )
