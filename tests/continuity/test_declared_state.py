"""Issue 27: a state change declared in a character card (``changes:``) — a death, an item changing
hands — at chapter N counts for the check from chapter N+1 on, as a chapter's <entity-update> would;
the rows come from the folder through the rebuilder, sync keeps them up to date, and live equals
rebuild."""

import shutil
from pathlib import Path

import pytest
from django.test import override_settings

from bookfiles.rebuilder import book_rebuild, book_sync
from continuity.selectors import chapters_check, draft_check
from core.models import Book
from entities.models import StateChange
from tests.bookfiles.live_state import live_and_rebuild
from tests.conftest import DEMO_BOOK
from tests.continuity.conftest import draft

pytestmark = pytest.mark.django_db

NO_HOOKS = {"WEBNOVEL_CHAPTER_INDEXERS": ["entities.mentions.mentions_index"], "WEBNOVEL_AFTER_CHAPTER_HOOKS": []}
SHEN_MO = "设定/角色/沈墨.md"
LIN_FENG = "设定/角色/林风.md"


def _card_declare(root: Path, card: str, changes: str) -> None:
    """Append ``changes:`` (YAML lines) to a card's front matter."""
    path = root / card
    head, sep, body = path.read_text(encoding="utf-8").partition("\n---\n")
    path.write_text(f"{head}\n{changes.rstrip()}{sep}{body}", encoding="utf-8")


@pytest.fixture
def root(tmp_path) -> Path:
    if not DEMO_BOOK.exists():
        pytest.skip(f"{DEMO_BOOK} is absent")
    return Path(shutil.copytree(DEMO_BOOK, tmp_path / "demo-book"))


def _rebuild(root: Path) -> Book:
    with override_settings(**NO_HOOKS):
        report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    return Book.objects.get(slug="demo-book")


def _inactive(book: Book, text: str) -> list[dict]:
    return [f for f in draft_check(book=book, text=draft(text, chapter=25))["findings"] if f["kind"] == "inactive_acts"]


def test_a_death_declared_in_the_card_counts_from_the_next_chapter(root):
    speech = "沈墨冷笑道：“你们谁也走不了。”"
    assert _inactive(_rebuild(root), speech) == []
    _card_declare(root, SHEN_MO, "changes:\n  - chapter: 20\n    set: {status: 死亡}\n    note: 剑冢一战身死")
    book = _rebuild(root)
    rows = list(StateChange.objects.filter(book=book, source="file").values_list("chapter", "op", "field", "new"))
    assert rows == [(20, "set", "status", "死亡")]
    found = _inactive(book, speech)
    assert [(f["line"], f["severity"], f["term"]) for f in found] == [(4, "error", "沈墨")]
    lines = (root / SHEN_MO).read_text(encoding="utf-8").split("\n")
    assert found[0]["evidence"] == {
        "chapter": 20,
        "file": SHEN_MO,
        "line": lines.index("  - chapter: 20") + 1,
        "fact": "沈墨 状态为「死亡」（截至第24章）",
    }
    # chapter 20 itself is checked against chapter 19: he is alive there
    assert [c["chapter"] for c in chapters_check(book=book, start=20, end=20)["chapters"] if c["counts"]["error"]] == []


def test_an_item_moved_in_the_cards_counts_for_item_not_held(root):
    _card_declare(root, LIN_FENG, "changes:\n  - {chapter: 22, remove: {possessions: 断剑青岚}}")
    _card_declare(root, SHEN_MO, "changes:\n  - {chapter: 22, add: {possessions: [断剑青岚]}}")
    book = _rebuild(root)
    result = draft_check(book=book, text=draft("林风拔出断剑青岚，直指沈墨。", chapter=25))
    items = [(f["line"], f["severity"], f["term"]) for f in result["findings"] if f["kind"] == "item_not_held"]
    assert items == [(4, "error", "林风:断剑青岚")] or items == [(4, "error", "断剑青岚")]
    found = next(f for f in result["findings"] if f["kind"] == "item_not_held")
    assert found["evidence"]["file"] == LIN_FENG
    assert found["evidence"]["chapter"] == 22


def test_a_bad_declaration_is_a_warning_that_says_where(root):
    _card_declare(root, SHEN_MO, "changes:\n  - {set: {status: 死亡}}\n  - {chapter: 第二十章, kill: 沈墨}")
    with override_settings(**NO_HOOKS):
        report = book_rebuild(root=root)
    messages = [w["message"] for w in report["warnings"] if w.get("file") == SHEN_MO]
    assert "沈墨 的 changes 第 1 条缺少 chapter（从第几章起生效）" in messages
    assert any(m.startswith("沈墨 的 changes 第 2 条有未知的键 kill") for m in messages)
    assert StateChange.objects.filter(book__slug="demo-book", source="file").count() == 0


def test_sync_updates_the_declared_rows_and_live_equals_rebuild(root):
    book = _rebuild(root)
    _card_declare(root, SHEN_MO, "changes:\n  - {chapter: 20, set: {status: 死亡}}")
    with override_settings(**NO_HOOKS):
        report = book_sync(book=book)
    assert report["ok"], report.get("errors")
    rows = StateChange.objects.filter(book=book, source="file")
    assert list(rows.values_list("chapter", "new")) == [(20, "死亡")]
    # the death moved: the old row is gone, the new one is there
    text = (root / SHEN_MO).read_text(encoding="utf-8").replace("chapter: 20", "chapter: 23")
    (root / SHEN_MO).write_text(text, encoding="utf-8")
    with override_settings(**NO_HOOKS):
        report = book_sync(book=book)
    assert report["ok"], report.get("errors")
    assert list(rows.values_list("chapter", "new")) == [(23, "死亡")]
    retcon = next(
        r for r in report.get("canon_changes", []) if r["reporter"] == "continuity.retcon.canon_change_report"
    )
    assert "沈墨 status 死亡：第20章 → 第23章" in retcon["canon_diff"]
    with override_settings(**NO_HOOKS):
        tables, dump = live_and_rebuild(slug="demo-book", root=root)
    assert tables == [] and dump == []


def test_a_roster_entry_declares_changes_too(root):
    roster = root / "设定" / "名册.yaml"
    text = roster.read_text(encoding="utf-8").replace(
        "    state:\n      主人: 陆家\n",
        "    state:\n      主人: 陆家\n    changes:\n      - {chapter: 18, set: {主人: 幽冥殿}, note: 白鹭洲失守}\n",
    )
    roster.write_text(text, encoding="utf-8")
    book = _rebuild(root)
    rows = StateChange.objects.filter(book=book, source="file")
    assert list(rows.values_list("entity__canonical_name", "chapter", "op", "field", "new", "reason")) == [
        ("白鹭洲", 18, "set", "主人", "幽冥殿", "白鹭洲失守")
    ]
    # the entry's own state is the state before chapter 1, without the declaration in it
    assert rows.get().entity.base_state == {"主人": "陆家"}
