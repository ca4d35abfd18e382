"""Issue 27: a state change declared in a timeline row (its 状态变化 cell: ``沈墨 set status=死亡``) — a
death, an item changing hands — at chapter N counts for the check from chapter N+1 on, exactly as a
card's ``changes:`` entry does: built by the rebuild, rebuilt by ``sync`` when only the timeline
changed (live equals rebuild), cited with the timeline's file and line, refused by curation."""

import json
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings

from bookfiles.rebuilder import book_dump, book_rebuild, book_sync
from continuity.selectors import chapters_check, draft_check
from core.models import Book, TimelineRow
from entities.models import StateChange
from entities.services.curation import state_change_delete, state_change_edit
from entities.services.writes import state_change_curate
from kernel.exceptions import InvalidInput
from tests.bookfiles.live_state import live_and_rebuild
from tests.bookfiles.test_journal import _session
from tests.conftest import DEMO_BOOK
from tests.continuity.conftest import draft

pytestmark = pytest.mark.django_db

NO_HOOKS = {"WEBNOVEL_CHAPTER_INDEXERS": ["entities.mentions.mentions_index"], "WEBNOVEL_AFTER_CHAPTER_HOOKS": []}
TIMELINE = "时间线/第2卷.md"
SHEN_MO = "设定/角色/沈墨.md"
SPEECH = "沈墨冷笑道：“你们谁也走不了。”"


def _timeline_declare(root: Path, cells: dict[int, str], timeline: str = TIMELINE) -> dict[int, int]:
    """Give a timeline (时间线/第2卷.md) a 状态变化 column with ``cells`` (chapter → cell), every other
    row empty; returns chapter → the row's line."""
    path = root / timeline
    out, lines = [], {}
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if line.startswith("| 章 |"):
            line = line.replace(" | 状态变化 |", " |") + " 状态变化 |"
        elif line.startswith("|---"):
            line = "|---|---|---|---|---|"
        elif line.startswith("| "):
            chapter = int(line.split("|")[1])
            cells_now = line.split("|")[1:5]
            line = "|" + "|".join(cells_now) + f"| {cells.get(chapter, '')} |"
            lines[chapter] = number
        out.append(line)
    path.write_text("\n".join(out), encoding="utf-8")
    return lines


@pytest.fixture
def root(tmp_path) -> Path:
    if not DEMO_BOOK.exists():
        pytest.skip(f"{DEMO_BOOK} is absent")
    return Path(shutil.copytree(DEMO_BOOK, tmp_path / "demo-book"))


def _rebuild(root: Path) -> tuple[Book, dict]:
    with override_settings(**NO_HOOKS):
        report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    return Book.objects.get(slug="demo-book"), report


def _sync(book: Book) -> dict:
    with override_settings(**NO_HOOKS):
        report = book_sync(book=book)
    assert report["ok"], report.get("errors")
    return report


def _inactive(book: Book, text: str, chapter: int = 25) -> list[dict]:
    found = draft_check(book=book, text=draft(text, chapter=chapter))["findings"]
    return [f for f in found if f["kind"] == "inactive_acts"]


def _rows(book: Book) -> list[tuple]:
    rows = StateChange.objects.filter(book=book, source="timeline").order_by("chapter", "id")
    return list(rows.values_list("entity__canonical_name", "chapter", "op", "field", "new", "reason"))


def test_a_death_declared_in_the_timeline_counts_from_the_next_chapter(root):
    assert _inactive(_rebuild(root)[0], SPEECH) == []
    lines = _timeline_declare(root, {20: "沈墨 set status=死亡"})
    book, _ = _rebuild(root)
    assert _rows(book) == [("沈墨", 20, "set", "status", "死亡", f"{TIMELINE}:{lines[20]} 剑冢开启")]
    # the timeline rows themselves are stored as before (the extra column is not an event)
    assert TimelineRow.objects.get(book=book, chapter=20).event == "剑冢开启"
    found = _inactive(book, SPEECH)
    assert [(f["line"], f["severity"], f["term"]) for f in found] == [(4, "error", "沈墨")]
    assert found[0]["evidence"] == {
        "chapter": 20,
        "file": TIMELINE,
        "line": lines[20],
        "fact": "沈墨 状态为「死亡」（截至第24章）",
    }
    # chapter 20 itself is checked against chapter 19: he is alive there
    assert [c["chapter"] for c in chapters_check(book=book, start=20, end=20)["chapters"] if c["counts"]["error"]] == []


def test_an_alias_an_item_move_and_several_entries_in_one_cell(root):
    _timeline_declare(root, {22: "林风 remove possessions=断剑青岚；沈师兄 add possessions=断剑青岚"})
    book, _ = _rebuild(root)
    assert [r[:5] for r in _rows(book)] == [
        ("林风", 22, "remove", "possessions", "断剑青岚"),
        ("沈墨", 22, "add", "possessions", "断剑青岚"),
    ]
    result = draft_check(book=book, text=draft("林风拔出断剑青岚，直指沈墨。", chapter=25))
    found = [f for f in result["findings"] if f["kind"] == "item_not_held"]
    assert [(f["line"], f["severity"]) for f in found] == [(4, "error")]
    assert found[0]["evidence"]["file"] == TIMELINE
    assert found[0]["evidence"]["chapter"] == 22


def test_a_bad_entry_is_a_chinese_warning_naming_file_and_line(root):
    lines = _timeline_declare(
        root,
        {
            14: "王五 set status=死亡",
            15: "沈墨 kill status",
            16: "沈墨 set status",
            17: "沈墨死了",
            18: "林风 inc level=很多",
        },
    )
    _book, report = _rebuild(root)
    warnings = {(w["line"], w["message"]) for w in report["warnings"] if w.get("file") == TIMELINE}
    assert warnings == {
        (lines[14], f"时间线第 {lines[14]} 行的状态变化写的「王五」不是任何角色卡或名册条目的名字、别名或 id"),
        (lines[15], f"时间线第 {lines[15]} 行的状态变化「沈墨 kill status」的操作 kill 未知（可用 set、unset、add、remove、inc）"),
        (lines[16], f"时间线第 {lines[16]} 行的状态变化「沈墨 set status」缺少值（set status=…）"),
        (lines[17], f"时间线第 {lines[17]} 行的状态变化「沈墨死了」应写成「名字 操作 字段=值」（如「关羽 set status=死亡」）"),
        (lines[18], f"时间线第 {lines[18]} 行的状态变化「林风 inc level=很多」：inc 的值应为数字，实际为 '很多'"),
    }  # fmt: skip
    assert StateChange.objects.filter(book__slug="demo-book", source="timeline").count() == 0


def test_a_timeline_only_sync_moves_the_death_and_live_equals_rebuild(root):
    book, _ = _rebuild(root)
    _timeline_declare(root, {20: "沈墨 set status=死亡"})
    _sync(book)
    assert [r[1:5] for r in _rows(book)] == [(20, "set", "status", "死亡")]
    assert [f["term"] for f in _inactive(book, SPEECH, chapter=22)] == ["沈墨"]
    # the death moves to the end of chapter 23: chapter 22 is clean again, chapter 25 still is not
    lines = _timeline_declare(root, {23: "沈墨 set status=死亡"})
    report = _sync(book)
    assert _rows(book) == [("沈墨", 23, "set", "status", "死亡", f"{TIMELINE}:{lines[23]} 启程")]
    assert _inactive(book, SPEECH, chapter=22) == []
    assert _inactive(book, SPEECH)[0]["evidence"]["line"] == lines[23]
    retcon = next(
        r for r in report.get("canon_changes", []) if r["reporter"] == "continuity.retcon.canon_change_report"
    )
    assert "沈墨 status 死亡：第20章 → 第23章" in retcon["canon_diff"]
    with override_settings(**NO_HOOKS):
        tables, dump = live_and_rebuild(slug="demo-book", root=root)
    assert tables == [] and dump == []


def test_a_card_only_sync_keeps_the_timeline_rows_and_live_equals_rebuild(root):
    _timeline_declare(root, {20: "墨师兄 set status=死亡"})
    book, _ = _rebuild(root)
    assert [r[:2] for r in _rows(book)] == [("沈墨", 20)]
    # the card drops the alias the timeline used: the row goes, with a warning on the timeline's line
    card = root / SHEN_MO
    card.write_text(card.read_text(encoding="utf-8").replace(", 墨师兄]", "]"), encoding="utf-8")
    report = _sync(book)
    assert _rows(book) == []
    assert [w["file"] for w in report["warnings"] if "「墨师兄」" in w["message"]] == [TIMELINE]
    with override_settings(**NO_HOOKS):
        tables, dump = live_and_rebuild(slug="demo-book", root=root)
    assert tables == [] and dump == []


def test_curation_refuses_to_edit_or_delete_a_timeline_row(root):
    _timeline_declare(root, {20: "沈墨 set status=死亡"})
    book, _ = _rebuild(root)
    change = StateChange.objects.get(book=book, source="timeline")
    with pytest.raises(InvalidInput, match=f"声明在时间线里（{TIMELINE}:"):
        state_change_edit(change=change, number=21, field="status", op="set", new="死亡")
    with pytest.raises(InvalidInput, match="请改文件后同步"):
        state_change_delete(change=change)
    assert StateChange.objects.filter(book=book, source="timeline").count() == 1


def test_a_re_ingested_chapter_leaves_the_timeline_row_first_as_a_rebuild_does(root):
    shutil.rmtree(root / ".journal", ignore_errors=True)
    _timeline_declare(root, {3: "林风 set 心境=平静"}, timeline="时间线/第1卷.md")
    with override_settings(WEBNOVEL_AFTER_CHAPTER_HOOKS=[]):
        book = _session(root)
        ingested = StateChange.objects.filter(book=book, chapter=3, source="extraction").order_by("seq").first()
        state_change_curate(entity=ingested.entity, number=3, field="心境", new="警觉")
        path = root / ".journal" / "extractions" / "0003-000001.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data["state_changes"][0]["reason"] = "作者订正"
        path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        assert book_sync(book=book)["journal"] == {"extraction.edited": 1}
        declared = StateChange.objects.get(book=book, source="timeline")
        assert (declared.entity.canonical_name, declared.chapter, declared.seq) == ("林风", 3, 0)
        synced = book_dump(book=book)
        Book.objects.filter(slug="demo-book").delete()
        assert book_rebuild(root=root)["ok"]
        assert book_dump(book=Book.objects.get(slug="demo-book")) == synced


def test_the_admin_shows_a_timeline_row_read_only_naming_its_file(root, client):
    client.force_login(get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456"))
    lines = _timeline_declare(root, {20: "沈墨 set status=死亡"})
    book, _ = _rebuild(root)
    change = StateChange.objects.get(book=book, source="timeline")
    page = client.get(f"/admin/entities/statechange/{change.pk}/change/").content.decode()
    assert f"这条状态变更声明在时间线里（{TIMELINE}:{lines[20]} 的「状态变化」），请改文件后同步" in page
    assert 'name="chapter"' not in page
    client.post(f"/admin/entities/statechange/{change.pk}/change/", {"chapter": "21", "field": "status"})
    change.refresh_from_db()
    assert (change.chapter, change.new) == (20, "死亡")
    assert client.post(f"/admin/entities/statechange/{change.pk}/delete/", {"post": "yes"}).status_code == 403
    assert StateChange.objects.filter(book=book, source="timeline").count() == 1


def test_removing_the_timeline_file_removes_its_rows_by_sync(root):
    _timeline_declare(root, {20: "沈墨 set status=死亡"})
    book, _ = _rebuild(root)
    assert [f["term"] for f in _inactive(book, SPEECH)] == ["沈墨"]
    (root / TIMELINE).unlink()
    _sync(book)
    assert _rows(book) == []
    assert _inactive(book, SPEECH) == []
    with override_settings(**NO_HOOKS):
        tables, dump = live_and_rebuild(slug="demo-book", root=root)
    assert tables == [] and dump == []
