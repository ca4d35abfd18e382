"""Issue 19, item 9: an ingestion during a rebuild of the same book deadlocked or hit
``uniq_appearance`` on PostgreSQL and the extraction was lost. Every writer of a book now takes the
book's writer lock first (core/locks.py), so one waits for the other. Each test holds one writer
paused inside its transaction (a child process, after some of its writes), starts the other, checks
that it waits, lets the first go on, and checks that both finished and neither's work was lost. Runs
on SQLite (file database) and, with DATABASE_URL, on PostgreSQL."""

import json
import subprocess
import time

import pytest

from bench.bench_faults import child_run, child_start, child_start_paused, dump

# writers in child processes, each waited for (like the kill -9 tests): `-m "not slow"` skips them locally
pytestmark = pytest.mark.slow

CHAPTER_5 = "定稿/正文/第1卷/第0005章.md"
EDIT = "\n山门外忽起一阵怪风。\n"
EXTRACTION = {
    "entities_new": [{"name": "守门老人", "type": "角色", "aliases": ["老门房"], "confidence": 0.95}],
    "entities_appeared": [{"id": "linfeng", "mentions": ["林风"], "confidence": 0.95}],
    "scenes": [{"index": 1, "location": "山门", "summary": "守门老人拦路", "characters": ["林风"]}],
}
WAIT = 1.5  # long enough for a writer that does not queue to have finished (the ingestion alone: ~0.1 s)


@pytest.fixture
def built(child_db, demo_copy, tmp_path):
    child_run("rebuild", str(demo_copy), db_url=child_db)
    payload = tmp_path / "extraction.json"
    payload.write_text(json.dumps(EXTRACTION, ensure_ascii=False), encoding="utf-8")
    return child_db, demo_copy, payload


def _finish(proc: subprocess.Popen, name: str) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, f"{name} failed ({proc.returncode}): {err[-3000:]}"
    return out


def _both_landed(db_url: str) -> None:
    state = json.loads(dump(db_url))
    book = state["books"]["demo-book"]
    assert "山门外忽起一阵怪风" in book  # the rebuild's edit
    extractions = [json.loads(r) for r in state["entities.Extraction"]]
    assert [e["chapter"] for e in extractions if "守门老人" in json.dumps(e, ensure_ascii=False)] == [5]
    entities = [json.loads(r) for r in state["entities.Entity"]]
    assert [e["canonical_name"] for e in entities if e["canonical_name"] == "守门老人"] == ["守门老人"]
    appearances = [json.loads(r) for r in state["entities.Appearance"]]
    from_extraction = [a for a in appearances if a["chapter"] == 5 and a["source"] == "extraction"]
    assert [(a["count"], a["aliases"]) for a in from_extraction] == [(1, {"林风": 1})]


def test_ingestion_during_a_rebuild_waits_for_it(built, tmp_path):
    db_url, root, payload = built
    (root / CHAPTER_5).write_text((root / CHAPTER_5).read_text(encoding="utf-8") + EDIT, encoding="utf-8")
    resume = tmp_path / "resume"
    rebuild = child_start_paused(
        "rebuild", str(root), db_url=db_url, pause_file=tmp_path / "paused", resume_file=resume, pause_after=20
    )
    ingest = child_start("ingest", "demo-book", "5", str(payload), db_url=db_url)
    time.sleep(WAIT)
    assert ingest.poll() is None, "the ingestion did not wait for the rebuild in flight"
    resume.write_text("go")
    report = json.loads(_finish(rebuild, "rebuild"))
    result = json.loads(_finish(ingest, "ingest"))
    assert report["ok"] is True and report["hook_failures"] == []
    assert (result["adopted"]["entities_new"], result["hook_failures"]) == (1, [])
    _both_landed(db_url)


def test_rebuild_during_an_ingestion_waits_for_it(built, tmp_path):
    db_url, root, payload = built
    (root / CHAPTER_5).write_text((root / CHAPTER_5).read_text(encoding="utf-8") + EDIT, encoding="utf-8")
    resume = tmp_path / "resume"
    ingest = child_start_paused(
        "ingest",
        "demo-book",
        "5",
        str(payload),
        db_url=db_url,
        pause_file=tmp_path / "paused",
        resume_file=resume,
        pause_after=3,
    )
    rebuild = child_start("rebuild", str(root), db_url=db_url)
    time.sleep(WAIT)
    assert rebuild.poll() is None, "the rebuild did not wait for the ingestion in flight"
    resume.write_text("go")
    result = json.loads(_finish(ingest, "ingest"))
    report = json.loads(_finish(rebuild, "rebuild"))
    assert result["adopted"]["entities_new"] == 1 and report["ok"] is True
    _both_landed(db_url)
