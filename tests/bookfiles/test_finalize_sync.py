"""chapter_finalize and book_sync: only the files involved are re-read, only their rows change, and
the result equals a full rebuild of the same folder (compared through book_dump)."""

import json
import logging
import os

import pytest
from django.core.management import CommandError, call_command

from bookfiles.rebuilder import book_dump, book_rebuild, book_sync, chapter_finalize
from bookfiles.rebuilder.incremental import chapter_path_find
from core.models import Book, Chapter, Fingerprint, SourceFile, Volume
from entities.models import Alias, Entity
from kernel.exceptions import Conflict, NotFound
from tests.factories import CARD_LINFENG, CHAPTER_2, book_folder_make, book_write, chapter_text
from threads.models import Thread

pytestmark = pytest.mark.django_db

CHAPTER_4 = chapter_text(title="问剑", chapter_position="推进", threads={"advances": ["悬念-001"]}, body="林风问剑！")
CHAPTER_4_PATH = "定稿/正文/第二卷/第0004章.md"


@pytest.fixture
def mini(tmp_path):
    root = book_folder_make(tmp_path / "mini")
    book_rebuild(root=root)
    return root


def _book() -> Book:
    return Book.objects.get(slug="mini")


def _rebuilt_dump(root) -> str:
    """The dump a full rebuild of ``root`` gives, computed in a savepoint that is rolled back."""
    from django.db import transaction

    class Rollback(Exception):
        pass

    holder = {}
    try:
        with transaction.atomic():
            book_rebuild(root=root)
            holder["dump"] = book_dump(book=_book())
            raise Rollback
    except Rollback:
        pass
    return holder["dump"]


def _pks(model, **filters):
    return dict(model.objects.filter(book__slug="mini", **filters).values_list("source_path", "pk"))


def test_finalize_new_chapter_touches_only_its_rows(mini):
    chapters_before = _pks(Chapter)
    threads_before = _pks(Thread)
    entities_before = dict(Entity.objects.values_list("entity_id", "pk"))
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)
    report = chapter_finalize(book=_book(), number=4)
    assert report["ok"] is True
    assert (report["added"], report["changed"], report["removed"]) == ([CHAPTER_4_PATH], [], [])
    assert report["chapters"] == {"updated": [4], "removed": []}
    assert report["rows"] == {
        "chapters": 1,
        "volumes": 0,
        "threads": 0,
        "secrets": 0,
        "documents": 0,
        "sections": 0,
        "timeline_rows": 0,
    }
    assert report["warnings"] == []
    chapter = Chapter.objects.get(book__slug="mini", number=4)
    assert (chapter.volume, chapter.title, chapter.advances, chapter.word_count) == (2, "问剑", ["悬念-001"], 5)
    assert Fingerprint.objects.get(book__slug="mini", start_chapter=4).features["exclamations"] == 1
    assert SourceFile.objects.get(book__slug="mini", path=CHAPTER_4_PATH).kind == "chapter"
    # the other rows were not rewritten
    assert {k: v for k, v in _pks(Chapter).items() if k != CHAPTER_4_PATH} == chapters_before
    assert _pks(Thread) == threads_before
    assert dict(Entity.objects.values_list("entity_id", "pk")) == entities_before
    assert book_dump(book=_book()) == _rebuilt_dump(mini)


def test_finalize_does_not_read_other_chapters(mini):
    # another chapter file becomes undecodable: finalize of chapter 4 never opens it
    (mini / "定稿/正文/第1卷 青岚初鸣/第0002章.md").write_bytes(b"\xff\xfe\x00broken")
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)
    report = chapter_finalize(book=_book(), number=4)
    assert report["ok"] is True
    assert report["unreadable"] == []
    assert Chapter.objects.get(book__slug="mini", number=2).title == "剑中残魂"


def test_finalize_picks_up_changed_settings_files(mini):
    book_write(mini, CHAPTER_4_PATH, chapter_text(title="问剑", threads={"opens": ["悬念-002"]}))
    book_write(mini, "线索/悬念-001.md", "---\ntitle: 老者到底是谁\nopened: 2\n---\n## 履历\n- 第4章：再问。\n")
    book_write(mini, "设定/角色/林风.md", CARD_LINFENG.replace("[小风,", "[小风, 风儿,"))
    (mini / "文风/基调.md").unlink()
    report = chapter_finalize(book=_book(), number=4)
    assert report["ok"] is True
    assert report["changed"] == ["线索/悬念-001.md", "设定/角色/林风.md"]
    assert report["removed"] == ["文风/基调.md"]
    assert [(w["code"], w["file"]) for w in report["warnings"]] == [("unknown_thread", CHAPTER_4_PATH)]
    thread = Thread.objects.get(book__slug="mini", thread_id="悬念-001")
    assert thread.title == "老者到底是谁"
    assert list(thread.history.values_list("chapter", flat=True)) == [4]
    assert Alias.objects.filter(book__slug="mini", alias="风儿", entity__entity_id="linfeng").exists()
    assert book_dump(book=_book()) == _rebuilt_dump(mini)


def test_finalize_unchanged_chapter_reports_unchanged(mini):
    report = chapter_finalize(book=_book(), number=2)
    assert report["ok"] is True
    assert (report["added"], report["changed"], report["unchanged"]) == (
        [],
        [],
        ["定稿/正文/第1卷 青岚初鸣/第0002章.md"],
    )


def test_finalize_missing_chapter_is_not_found(mini):
    with pytest.raises(NotFound, match="第9章的文件不存在"):
        chapter_finalize(book=_book(), number=9)
    with pytest.raises(CommandError, match="第9章的文件不存在"):
        call_command("finalize", "mini", "9")


def test_new_chapter_path_is_guessed_next_to_its_neighbour_or_found_by_name(mini):
    """chapter_path_find: next to chapter N-1 (a stat, no walk), elsewhere by name, two claims → 409."""
    book = _book()
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)  # 第0003章 lives in 第二卷/: the guess
    assert chapter_path_find(book=book, root=mini, number=4) == CHAPTER_4_PATH
    odd = "定稿/正文/番外/第0004章.md"
    os.makedirs(mini / "定稿/正文/番外")
    os.replace(mini / CHAPTER_4_PATH, mini / odd)
    assert chapter_path_find(book=book, root=mini, number=4) == odd  # not where guessed: found by name
    book_write(mini, "定稿/正文/第1卷 青岚初鸣/第0004章.md", CHAPTER_4)
    with pytest.raises(
        Conflict, match="第4章有多个文件：定稿/正文/番外/第0004章.md、定稿/正文/第1卷 青岚初鸣/第0004章.md"
    ):
        chapter_path_find(book=book, root=mini, number=4)


def test_sync_duplicate_number_is_an_error(mini):
    book_write(mini, "定稿/正文/第0002章 副本.md", chapter_text(title="副本"))
    (mini / "定稿/正文/第1卷 青岚初鸣/第0002章.md").unlink()
    before = book_dump(book=_book())
    book_write(mini, "定稿/正文/第1卷 青岚初鸣/第0002章.md", CHAPTER_2)
    book_write(mini, "定稿/正文/第0003章.md", chapter_text(title="抢号"))
    # a second file for chapter 2 and one for chapter 3: sync sees both and refuses
    report = book_sync(book=_book())
    assert report["ok"] is False
    assert {(e["code"], e["file"]) for e in report["errors"]} == {
        ("duplicate", "定稿/正文/第0002章 副本.md"),
        ("duplicate", "定稿/正文/第0003章.md"),
    }
    assert book_dump(book=_book()) == before


def test_sync_edit_add_delete(mini):
    book_write(mini, "定稿/正文/第1卷 青岚初鸣/第0002章.md", CHAPTER_2.replace("剑中残魂\n", "残魂\n"))
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)
    (mini / "定稿/正文/第二卷/第0003章.md").unlink()
    unchanged = _pks(Chapter)["定稿/正文/第1卷 青岚初鸣/第0001章.md"]
    report = book_sync(book=_book())
    assert report["ok"] is True
    assert report["added"] == [CHAPTER_4_PATH]
    assert report["changed"] == ["定稿/正文/第1卷 青岚初鸣/第0002章.md"]
    assert report["removed"] == ["定稿/正文/第二卷/第0003章.md"]
    assert report["chapters"] == {"updated": [2, 4], "removed": [3]}
    assert report["rebuilt"] is False
    assert list(Chapter.objects.filter(book__slug="mini").values_list("number", "title")) == [
        (1, "山门夜雨"),
        (2, "残魂"),
        (4, "问剑"),
    ]
    assert _pks(Chapter)["定稿/正文/第1卷 青岚初鸣/第0001章.md"] == unchanged
    assert list(Fingerprint.objects.filter(book__slug="mini").values_list("start_chapter", flat=True)) == [1, 2, 4]
    assert not SourceFile.objects.filter(book__slug="mini", path="定稿/正文/第二卷/第0003章.md").exists()
    assert book_dump(book=_book()) == _rebuilt_dump(mini)
    # nothing changed since: an empty sync
    again = book_sync(book=_book())
    assert (again["added"], again["changed"], again["removed"], again["warnings"]) == ([], [], [], [])


def test_sync_deleting_evidence_chapter_and_thread_warns(mini):
    (mini / "定稿/正文/第1卷 青岚初鸣/第0002章.md").unlink()
    (mini / "线索/伏笔-001 断剑之谜.md").unlink()
    report = book_sync(book=_book())
    assert report["ok"] is True
    assert sorted((w["code"], w["file"]) for w in report["warnings"]) == [
        ("missing_evidence_chapter", "线索/悬念-001.md"),
        ("unknown_thread", "定稿/正文/第1卷 青岚初鸣/第0001章.md"),
    ]
    assert book_dump(book=_book()) == _rebuilt_dump(mini)


def test_sync_unreadable_and_vanished_files(mini):
    before_ch2 = Chapter.objects.get(book__slug="mini", number=2).body
    (mini / "定稿/正文/第1卷 青岚初鸣/第0002章.md").write_bytes(b"---\ntitle: \xff\n---\n")
    os.symlink(mini / "gone.md", mini / "定稿/正文/第0005章.md")  # listed, but gone when read
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)
    report = book_sync(book=_book())
    assert report["ok"] is True
    assert sorted(u["file"] for u in report["unreadable"]) == [
        "定稿/正文/第0005章.md",
        "定稿/正文/第1卷 青岚初鸣/第0002章.md",
    ]
    assert report["added"] == [CHAPTER_4_PATH]
    assert report["removed"] == []
    assert Chapter.objects.get(book__slug="mini", number=2).body == before_ch2
    assert Chapter.objects.filter(book__slug="mini", number=4).exists()


def test_sync_yaml_error_changes_nothing(mini):
    before = book_dump(book=_book())
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)
    book_write(mini, "线索/悬念-001.md", "---\ntitle: [坏\n---\n")
    report = book_sync(book=_book())
    assert report["ok"] is False
    assert [(e["code"], e["file"], e["line"]) for e in report["errors"]] == [("yaml_error", "线索/悬念-001.md", 3)]
    assert book_dump(book=_book()) == before
    with pytest.raises(CommandError, match="同步失败"):
        call_command("sync", "mini")


def test_sync_book_yaml_change_rebuilds(mini):
    book_write(mini, "book.yaml", (mini / "book.yaml").read_text(encoding="utf-8").replace("伏笔: 25", "伏笔: 12"))
    report = book_sync(book=_book())
    assert (report["ok"], report["rebuilt"], report["changed"]) == (True, True, ["book.yaml"])
    assert report["counts"]["chapters"] == 3
    assert _book().thresholds["伏笔"] == 12


def test_sync_roster_change_rederives_entities_and_volumes(mini):
    book_write(mini, "设定/名册.yaml", "地点:\n  - name: 雾海\n")
    book_write(mini, "定稿/正文/第3卷 归墟/第0009章.md", chapter_text(title="归墟"))
    report = book_sync(book=_book())
    assert report["ok"] is True
    assert sorted(Entity.objects.filter(book__slug="mini").values_list("entity_id", flat=True)) == [
        "jianlao",
        "linfeng",
        "loc_wuhai",
    ]
    assert list(Volume.objects.filter(book__slug="mini").values_list("number", "name")) == [
        (1, "青岚初鸣"),
        (2, "雾海问剑"),
        (3, "归墟"),
    ]
    assert book_dump(book=_book()) == _rebuilt_dump(mini)


CALLS: list = []


def indexer_recording(*, book, numbers, removed):
    CALLS.append(("indexer", numbers, removed))


def hook_failing(*, book, numbers, removed):
    raise RuntimeError("记忆钩子故障")


def hook_recording(*, book, numbers, removed):
    CALLS.append(("hook", numbers, removed))


def test_indexers_and_best_effort_hooks(mini, settings, django_capture_on_commit_callbacks, caplog):
    settings.WEBNOVEL_CHAPTER_INDEXERS = ["tests.bookfiles.test_finalize_sync.indexer_recording"]
    settings.WEBNOVEL_AFTER_CHAPTER_HOOKS = [
        "tests.bookfiles.test_finalize_sync.hook_failing",
        "tests.bookfiles.test_finalize_sync.hook_recording",
    ]
    CALLS.clear()
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
        report = chapter_finalize(book=_book(), number=4)
    assert report["ok"] is True
    assert CALLS == [("indexer", [4], []), ("hook", [4], [])]
    assert "hook_failing failed" in caplog.text
    assert [(f["hook"], "RuntimeError: 记忆钩子故障" in f["message"]) for f in report["hook_failures"]] == [
        ("tests.bookfiles.test_finalize_sync.hook_failing", True)
    ]
    assert Chapter.objects.filter(book__slug="mini", number=4).exists()


def test_finalize_and_sync_commands(mini, capsys):
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)
    call_command("finalize", "mini", "4", "--json")
    out = json.loads(capsys.readouterr().out)
    assert (out["ok"], out["added"]) == (True, [CHAPTER_4_PATH])
    book_write(mini, "定稿/正文/第0005章.md", chapter_text(title="五"))
    call_command("sync", "mini")
    text = capsys.readouterr().out
    assert "同步《青岚剑录》：成功" in text and "新增文件 1：定稿/正文/第0005章.md" in text
    with pytest.raises(CommandError, match="章节号必须是 1…10,000,000 的整数：0"):
        call_command("finalize", "mini", "0")
    with pytest.raises(CommandError, match="章节号必须是 1…10,000,000 的整数：9223372036854775808"):
        call_command("finalize", "mini", "9223372036854775808")
    with pytest.raises(CommandError, match="书籍 'nope' 不存在"):
        call_command("sync", "nope")


def test_finalize_broken_chapter_changes_nothing(mini):
    before = book_dump(book=_book())
    book_write(mini, CHAPTER_4_PATH, "---\ntitle: 问剑\nthreads: {opens: [伏笔-001}\n---\n正文\n")
    report = chapter_finalize(book=_book(), number=4)
    assert report["ok"] is False
    assert [(e["code"], e["file"], e["line"]) for e in report["errors"]] == [("yaml_error", CHAPTER_4_PATH, 3)]
    assert book_dump(book=_book()) == before
    with pytest.raises(CommandError, match="定稿失败：1 个错误"):
        call_command("finalize", "mini", "4")


def test_finalize_trusts_size_and_mtime_sync_hashes(mini):
    thread = mini / "线索/悬念-001.md"
    stat = thread.stat()
    original = thread.read_text(encoding="utf-8")
    # same size, same mtime, different content: finalize skips the file without reading it …
    thread.write_text(original.replace("老者身份", "老人身份"), encoding="utf-8")
    os.utime(thread, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)
    report = chapter_finalize(book=_book(), number=4)
    assert report["changed"] == []
    assert Thread.objects.get(book__slug="mini", thread_id="悬念-001").title == "老者身份"
    # … while sync always compares hashes
    report = book_sync(book=_book())
    assert report["changed"] == ["线索/悬念-001.md"]
    assert Thread.objects.get(book__slug="mini", thread_id="悬念-001").title == "老人身份"


def test_touched_file_is_unchanged_and_its_mtime_recorded(mini):
    path = mini / "线索/悬念-001.md"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    book_write(mini, CHAPTER_4_PATH, CHAPTER_4)
    report = chapter_finalize(book=_book(), number=4)
    assert (report["added"], report["changed"]) == ([CHAPTER_4_PATH], [])
    assert SourceFile.objects.get(book__slug="mini", path="线索/悬念-001.md").mtime_ns == path.stat().st_mtime_ns


def test_sync_duplicate_entity_id_changes_nothing(mini):
    before = book_dump(book=_book())
    book_write(mini, "设定/角色/剑老.md", "---\nname: 剑老\nid: linfeng\n---\n")
    book_write(mini, "设定/角色/林风.md", CARD_LINFENG.replace("name: 林风\n", "name: 林风\nid: linfeng\n"))
    report = book_sync(book=_book())
    assert report["ok"] is False
    assert [(e["code"], e["file"], e["line"]) for e in report["errors"]] == [("duplicate", "设定/角色/林风.md", 2)]
    assert book_dump(book=_book()) == before


def test_sync_refuses_a_changed_slug(mini):
    book_write(mini, "book.yaml", (mini / "book.yaml").read_text(encoding="utf-8").replace("slug: mini", "slug: other"))
    report = book_sync(book=_book())
    assert (report["ok"], [e["code"] for e in report["errors"]]) == (False, ["slug_changed"])
    assert list(Book.objects.values_list("slug", flat=True)) == ["mini"]
