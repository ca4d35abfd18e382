"""kill -9 inside a rebuild, a sync and an ingestion; two rebuilds at once; files that vanish or
become unreadable while a sync reads them. The killed operations run in child processes against a
file database (``child_db``) and are killed while paused inside their transaction, after some of
their writes (bench/bench_faults.py kills at random instants instead)."""

import json
import os
import subprocess
import time

import pytest

from bench.bench_faults import child_cmd, child_env, child_kill_at_pause, child_run, dump
from bookfiles.rebuilder import book_rebuild, book_sync
from core.models import Book, Chapter
from tests.conftest import REPO

# kill -9 of child processes mid-transaction (each waits for its child): `-m "not slow"` skips them locally
pytestmark = pytest.mark.slow

CHAPTER_5 = "定稿/正文/第1卷/第0005章.md"
EDIT = "\n山门外忽起一阵怪风。\n"

EXTRACTION = {
    "entities_new": [{"name": "守门老人", "type": "角色", "aliases": ["老门房"], "confidence": 0.95}],
    "scenes": [{"index": 1, "location": "山门", "summary": "守门老人拦路", "characters": []}],
}


@pytest.fixture
def built(child_db, demo_copy):
    """The demo book rebuilt into the child database; returns (db_url, root, dump)."""
    child_run("rebuild", str(demo_copy), db_url=child_db)
    return child_db, demo_copy, dump(child_db)


def test_kill_during_rebuild_keeps_previous_data_and_rerun_succeeds(built, tmp_path):
    db_url, root, before = built
    (root / CHAPTER_5).write_text((root / CHAPTER_5).read_text(encoding="utf-8") + EDIT, encoding="utf-8")
    rc = child_kill_at_pause("rebuild", str(root), db_url=db_url, pause_file=tmp_path / "paused", pause_after=20)
    assert rc == -9
    assert dump(db_url) == before
    child_run("rebuild", str(root), db_url=db_url)
    after = dump(db_url)
    assert after != before
    assert "山门外忽起一阵怪风" in after and "山门外忽起一阵怪风" not in before


def test_kill_during_sync_keeps_previous_data_and_rerun_succeeds(built, tmp_path):
    db_url, root, before = built
    (root / CHAPTER_5).write_text((root / CHAPTER_5).read_text(encoding="utf-8") + EDIT, encoding="utf-8")
    rc = child_kill_at_pause("sync", "demo-book", db_url=db_url, pause_file=tmp_path / "paused", pause_after=3)
    assert rc == -9
    assert dump(db_url) == before
    report = json.loads(child_run("sync", "demo-book", db_url=db_url).stdout)
    assert report["ok"] is True
    assert report["changed"] == [CHAPTER_5]
    synced = dump(db_url)
    child_run("rebuild", str(root), db_url=db_url)
    assert dump(db_url) == synced  # the sync after the crash left what a full rebuild leaves


def test_kill_during_ingestion_keeps_previous_data_and_rerun_succeeds(built, tmp_path):
    db_url, _root, before = built
    payload = tmp_path / "extraction.json"
    payload.write_text(json.dumps(EXTRACTION, ensure_ascii=False), encoding="utf-8")
    rc = child_kill_at_pause(
        "ingest", "demo-book", "5", str(payload), db_url=db_url, pause_file=tmp_path / "paused", pause_after=2
    )
    assert rc == -9
    assert dump(db_url) == before
    child_run("ingest", "demo-book", "5", str(payload), db_url=db_url)
    after = dump(db_url)
    assert "守门老人" in after and "守门老人" not in before
    child_run("ingest", "demo-book", "5", str(payload), db_url=db_url)  # idempotent re-post
    assert dump(db_url) == after


def test_second_rebuild_waits_for_the_first_never_interleaves(built, tmp_path):
    db_url, root, _before = built
    (root / CHAPTER_5).write_text((root / CHAPTER_5).read_text(encoding="utf-8") + EDIT, encoding="utf-8")
    pause = tmp_path / "paused"
    first = subprocess.Popen(
        child_cmd("rebuild", str(root), pause_file=pause, pause_after=20),
        env=child_env(db_url),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    second = None
    try:
        for _ in range(3000):
            if pause.exists() or first.poll() is not None:
                break
            time.sleep(0.02)
        assert pause.exists(), "the first rebuild never reached its pause point"
        second = subprocess.Popen(
            child_cmd("rebuild", str(root)), env=child_env(db_url), cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        time.sleep(2.0)
        assert second.poll() is None  # waiting for the first one's lock, not writing beside it
        first.kill()
        first.wait()
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 0
        assert json.loads(out)["ok"] is True
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    concurrent = dump(db_url)
    child_run("rebuild", str(root), db_url=db_url)
    assert dump(db_url) == concurrent


# --- files that vanish or become unreadable while a sync reads them (in-process) -------------------


@pytest.fixture
def demo_db(db, demo_copy):
    report = book_rebuild(root=demo_copy)
    assert report["ok"] is True
    return demo_copy


def test_file_vanishing_or_unreadable_mid_sync_is_reported_and_nothing_else_lost(demo_db, monkeypatch):
    from bookfiles.rebuilder import incremental

    root = demo_db
    book = Book.objects.get(slug="demo-book")
    bodies = dict(Chapter.objects.filter(book=book).values_list("number", "body"))
    for number in (3, 7, 9):  # three edits: one vanishes, one turns unreadable, one goes through
        path = next(root.rglob(f"第{number:04d}章.md"))
        path.write_text(path.read_text(encoding="utf-8") + EDIT, encoding="utf-8")
    real_read = incremental.file_bytes_read

    def racing_read(path, **kwargs):
        if path.name == "第0003章.md":
            path.unlink()  # listed a moment ago, gone now
        if path.name == "第0007章.md":
            path.write_bytes(b"---\ntitle: \xff\xfe\n---\n")  # rewritten as garbage while we read
        return real_read(path, **kwargs)

    monkeypatch.setattr(incremental, "file_bytes_read", racing_read)
    report = book_sync(book=book)
    assert report["ok"] is True
    assert sorted(u["file"] for u in report["unreadable"]) == [
        "定稿/正文/第1卷/第0003章.md",
        "定稿/正文/第1卷/第0007章.md",
    ]
    assert report["changed"] == ["定稿/正文/第1卷/第0009章.md"]
    after = dict(Chapter.objects.filter(book=book).values_list("number", "body"))
    assert after[3] == bodies[3] and after[7] == bodies[7]  # previous rows kept
    assert "山门外忽起一阵怪风" in after[9] and "山门外忽起一阵怪风" not in bodies[9]
    assert set(after) == set(bodies)


def test_unreadable_file_aborts_rebuild_with_a_report_and_keeps_data(demo_db):
    root = demo_db
    before = Chapter.objects.filter(book__slug="demo-book").count()
    path = root / CHAPTER_5
    path.unlink()
    os.symlink(root / "gone.md", path)  # listed, but cannot be opened
    report = book_rebuild(root=root)
    assert report["ok"] is False
    assert [(e["file"], e["code"]) for e in report["errors"]] == [(CHAPTER_5, "unreadable")]
    assert Chapter.objects.filter(book__slug="demo-book").count() == before
