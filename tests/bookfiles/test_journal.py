"""The book folder holds everything (issue 14): every agent and curator write goes into
``<book>/.journal/``, and a rebuild into an empty database replays it so ``dump_book`` is identical."""

import copy
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import override_settings

from bookfiles.rebuilder import book_dump, book_rebuild, book_sync
from core.journal import LOG_PATH, journal_events
from core.models import Book, JournalApplied
from entities.models import Alias, Entity, PendingItem, Relationship, StateChange
from entities.services.ingest import extraction_ingest, extraction_parse
from entities.services.marks import aliases_generic_set, entity_merge
from entities.services.pending import pending_item_confirm, pending_item_reject
from entities.services.writes import entities_archive, state_change_curate
from kernel.exceptions import InvalidInput
from kernel.journal_ops import journal_ops_load
from memory.models import Fact
from memory.services import fact_close, fact_observe
from tests.conftest import DEMO_BOOK_SOURCE
from webnovel.demo import DEMO_EXTRACTIONS, demo_extractions_ingest

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("no_hooks"),
]


@pytest.fixture
def no_hooks():
    with override_settings(WEBNOVEL_AFTER_CHAPTER_HOOKS=[]):
        yield


@pytest.fixture
def folder(tmp_path) -> Path:
    if not (DEMO_BOOK_SOURCE / "book.yaml").is_file():
        pytest.skip("the demo book is absent")
    return Path(shutil.copytree(DEMO_BOOK_SOURCE, tmp_path / "demo-book", ignore=shutil.ignore_patterns(".journal")))


def _payload(chapter: int) -> dict:
    return extraction_parse(raw=(DEMO_EXTRACTIONS / f"第{chapter:04d}章.json").read_bytes())


def _book() -> Book:
    return Book.objects.get(slug="demo-book")


def _from_scratch(folder: Path) -> str:
    """Delete every row of the book, rebuild it from the folder, dump it."""
    Book.objects.filter(slug="demo-book").delete()
    report = book_rebuild(root=folder)
    assert report["ok"], report["errors"]
    return book_dump(book=_book())


def _session(folder: Path) -> Book:
    """demo_setup's ingestions, then a curator's and an agent's day: every journaled op once or more."""
    assert book_rebuild(root=folder)["ok"]
    book = _book()
    demo_extractions_ingest(book=book)
    held = {p.kind: p for p in PendingItem.objects.filter(book=book, status="pending")}
    assert sorted(held) == ["state_change", "uncertain"]
    pending_item_confirm(item=held["state_change"])  # 沈墨 → 幽冥殿 at chapter 8
    pending_item_reject(item=held["uncertain"], note="看不出是谁")
    # The replace path: chapter 6 again, now with two new names, one of them held.
    again = copy.deepcopy(_payload(6))
    again["entities_new"] = [
        {"name": "鬼脸人", "type": "角色", "aliases": ["鬼面"], "confidence": 0.9},
        {"name": "灰衣老者", "type": "角色", "confidence": 0.3},
    ]
    extraction_ingest(book=book, number=6, payload=again)
    pending_item_confirm(item=PendingItem.objects.get(book=book, kind="entity_new", status="pending"))
    ghost = Entity.objects.get(book=book, canonical_name="鬼脸人")
    entity_merge(source=ghost, target=Entity.objects.get(book=book, entity_id="shenmo"))
    entities_archive(entities=Entity.objects.filter(book=book, canonical_name="灰衣老者"), archived=True)
    aliases_generic_set(aliases=Alias.objects.filter(book=book, alias="鬼面"), generic=True)
    state_change_curate(
        entity=Entity.objects.get(book=book, entity_id="linfeng"),
        number=5,
        field="mood",
        new="决意",
        reason="校对补录",
    )
    fact = fact_observe(
        book=book, category="open_loops", subject="断剑", field="来历", value="剑老生前的佩剑", number=3
    )
    fact_close(fact=fact, number=8, reason="第8章揭晓")
    return book


def test_rebuild_into_an_empty_database_gives_back_every_write(folder):
    book = _session(folder)
    before = book_dump(book=book)
    written = json.loads(before)["written"]
    # the numbers: what a rebuild used to lose
    assert len(written["relationships"]) == 3
    assert Relationship.objects.filter(book=book).count() == 3
    assert StateChange.objects.filter(book=book, source="curation").count() == 2
    assert "听雨诀" in json.dumps(written["state_changes"], ensure_ascii=False)
    assert sorted((p["kind"], p["status"]) for p in written["pending"]) == [
        ("entity_new", "confirmed"),
        ("state_change", "confirmed"),
        ("uncertain", "rejected"),
    ]
    assert written["archived"] == ["huiyilaozhe"]
    assert [a["alias"] for a in written["aliases"] if a["generic"]] == ["鬼面"]
    assert [(f["subject"], f["closed_chapter"]) for f in written["facts"]] == [("断剑", 8)]

    after = _from_scratch(folder)
    assert after == before
    # and once more: a rebuild over a full database applies nothing twice (the curated change is at a
    # chapter without tag-derived changes: a rebuild over rows renumbers those after the curated ones)
    report = book_rebuild(root=folder)
    assert report["journal"] == {}
    assert book_dump(book=_book()) == before


def test_journal_files_are_plain_utf8_one_event_a_line(folder):
    _session(folder)
    events = journal_events(root=folder)
    ops = [e["op"] for e in events]
    assert ops == [
        "extraction.ingest",
        "extraction.ingest",
        "extraction.ingest",
        "pending.confirm",
        "pending.reject",
        "extraction.ingest",
        "pending.confirm",
        "entity.merge",
        "entities.archive",
        "aliases.generic",
        "state_change.record",
        "memory.fact.observe",
        "memory.fact.close",
    ]
    assert set(ops) <= set(journal_ops_load())
    assert [e["seq"] for e in events] == list(range(1, 14))
    lines = (folder / LOG_PATH).read_text(encoding="utf-8").splitlines()
    # the first line names the book (a random id, recorded in the database), then the events
    assert lines[0] == f'{{"seq": 0, "op": "journal.book", "book": "demo-book", "id": "{_book().journal_id}"}}'
    assert len(_book().journal_id) == 32
    assert lines[5] == (
        '{"seq": 5, "op": "pending.reject", "chapter": 6, "kind": "uncertain", "payload": {"adopted": null, '
        '"candidates": ["faction_youmingdian", "shenmo"], "confidence": 0.4, "mention": "半张鬼脸"}, '
        '"held": "\'半张鬼脸\' 指代不确定，候选：faction_youmingdian、shenmo", "note": "看不出是谁"}'
    )
    # each ingestion keeps its payload: the re-ingestion of chapter 6 is a second file, history exact
    files = sorted(p.name for p in (folder / ".journal" / "extractions").iterdir())
    assert files == ["0003-000001.json", "0006-000002.json", "0006-000006.json", "0008-000003.json"]
    text = (folder / ".journal" / "extractions" / "0006-000006.json").read_text(encoding="utf-8")
    assert '"name": "鬼脸人"' in text and text.count("\n") > 20  # pretty, readable, not \u escapes
    # the parser skips the dot folder: no source file, no warning
    report = book_rebuild(root=folder)
    assert not [w for w in report["warnings"] if ".journal" in w.get("path", "")]
    assert report["counts"]["chapters"] == 24


def test_an_event_whose_transaction_never_committed_is_applied_by_the_next_sync(folder):
    assert book_rebuild(root=folder)["ok"]
    book = _book()

    class Crash(Exception):
        pass

    # The file is written, then the process "dies" before the commit: rows and JournalApplied vanish.
    with pytest.raises(Crash), transaction.atomic():
        extraction_ingest(book=book, number=3, payload=_payload(3))
        raise Crash
    assert [e["op"] for e in journal_events(root=folder)] == ["extraction.ingest"]
    assert not StateChange.objects.filter(book=book, chapter=3).exists()
    assert not JournalApplied.objects.filter(book=book).exists()

    report = book_sync(book=book)
    assert report["journal"] == {"extraction.ingest": 1}
    assert StateChange.objects.filter(book=book, chapter=3, field="skills").count() == 1
    # never doubled: the next sync finds it applied, and a new write continues the seq
    assert book_sync(book=book)["journal"] == {}
    assert StateChange.objects.filter(book=book, chapter=3, field="skills").count() == 1
    extraction_ingest(book=book, number=8, payload=_payload(8))
    assert [e["seq"] for e in journal_events(root=folder)] == [1, 2]


def test_a_hand_edit_of_an_extraction_is_replayed_and_a_broken_one_named(folder):
    assert book_rebuild(root=folder)["ok"]
    extraction_ingest(book=_book(), number=3, payload=_payload(3))
    path = folder / ".journal" / "extractions" / "0003-000001.json"
    # The author fixes the agent's reason by hand: the rebuilt rows carry the fix.
    path.write_text(path.read_text(encoding="utf-8").replace("第一次引气入体", "首次引气入体"), encoding="utf-8")
    _from_scratch(folder)
    change = StateChange.objects.get(book=_book(), chapter=3, field="skills")
    assert change.reason == "剑老于瀑布边传授听雨诀，林风首次引气入体"

    path.write_text(path.read_text(encoding="utf-8").replace('"state_changes": [', '"state_changes": [,'), "utf-8")
    Book.objects.filter(slug="demo-book").delete()
    with pytest.raises(InvalidInput) as err:
        book_rebuild(root=folder)
    line = next(i for i, t in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if '"state_changes": [,' in t)
    assert err.value.message == (
        f"{LOG_PATH} 第2行（seq 1，extraction.ingest）：.journal/extractions/0003-000001.json 第{line}行第21列："
        "JSON 无效（Expecting value）"
    )
    assert not Book.objects.filter(slug="demo-book").exists()  # the rebuild's one transaction rolled back


def test_an_extraction_copy_a_crash_lost_is_rewritten_from_its_log_line(folder):
    # The log line is the durable record of an ingestion (it carries the payload, and it is the one
    # write fsynced); the pretty file is its readable copy, written without fsync. A machine crash may
    # lose the copy, leave it empty, zeroed or cut short: the replay rewrites it from the line.
    assert book_rebuild(root=folder)["ok"]
    extraction_ingest(book=_book(), number=3, payload=_payload(3))
    (event,) = journal_events(root=folder)
    assert event["data"]["state_changes"][0]["field"] == "skills" and event["file"] == "extractions/0003-000001.json"
    path = folder / ".journal" / event["file"]
    whole = path.read_bytes()
    live = book_dump(book=_book())
    for damage in (None, b"", b"\0" * len(whole), whole[: len(whole) // 2], whole[:100] + b"\0" * 50):
        if damage is None:
            path.unlink()
        else:
            path.write_bytes(damage)
        assert _from_scratch(folder) == live
        assert path.read_bytes() == whole
    # a copy the author broke (not a cut of the original) is still named, not overwritten
    path.write_bytes(whole.replace(b'"state_changes": [', b'"state_changes": [,'))
    Book.objects.filter(slug="demo-book").delete()
    with pytest.raises(InvalidInput, match="0003-000001.json 第"):
        book_rebuild(root=folder)


def test_a_broken_log_line_is_named(folder):
    assert book_rebuild(root=folder)["ok"]
    extraction_ingest(book=_book(), number=3, payload=_payload(3))
    log = folder / LOG_PATH
    log.write_text(log.read_text(encoding="utf-8") + '{"seq": 2, "op": "entity.merge"}\n{"seq": 3\n', "utf-8")
    with pytest.raises(InvalidInput) as err:
        journal_events(root=folder)
    assert err.value.message == f"{LOG_PATH} 第4行不是合法的 JSON：Expecting ',' delimiter（第10列）"
    log.write_text(log.read_text(encoding="utf-8").rsplit("{", 1)[0], "utf-8")
    with pytest.raises(InvalidInput) as err:
        book_sync(book=_book())
    assert err.value.message == f"{LOG_PATH} 第3行（seq 2，entity.merge）：缺少字段 source"


def test_a_torn_last_line_is_not_an_event_and_the_next_append_drops_it(folder):
    assert book_rebuild(root=folder)["ok"]
    extraction_ingest(book=_book(), number=3, payload=_payload(3))
    log = folder / LOG_PATH
    with open(log, "a", encoding="utf-8") as fh:
        fh.write('{"seq": 2, "op": "extrac')  # the writer died mid-line
    assert [e["seq"] for e in journal_events(root=folder)] == [1]
    extraction_ingest(book=_book(), number=8, payload=_payload(8))
    lines = log.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [0, 1, 2]


def test_a_book_without_a_folder_writes_no_journal():
    book = Book.objects.create(slug="nofolder", title="无目录")
    entity = Entity.objects.create(book=book, entity_id="a", type="角色", canonical_name="甲")
    state_change_curate(entity=entity, number=1, field="x", new="1")
    assert not JournalApplied.objects.filter(book=book).exists()
    assert Fact.objects.filter(book=book).count() == 0


def test_a_command_given_a_folder_whose_book_is_missing_rebuilds_it_first(folder, capsys):
    before = book_dump(book=_session(folder))
    Book.objects.filter(slug="demo-book").delete()
    call_command("dump_book", str(folder))
    out, err = capsys.readouterr()
    assert (
        err.strip()
        == f"《{json.loads(before)['book']['title']}》不在数据库中：已从 {folder} 重建（24 章，重放日志 13 条）"
    )
    assert out == before
    # the book is there now: the slug answers without rebuilding again
    call_command("dump_book", "demo-book")
    assert capsys.readouterr().err == ""
    with pytest.raises(CommandError, match="书籍 'nope' 不存在"):
        call_command("dump_book", "nope")


def test_an_event_that_no_longer_applies_is_skipped_with_a_warning_naming_its_line(folder):
    assert book_rebuild(root=folder)["ok"]
    extraction_ingest(book=_book(), number=24, payload=_payload(3))  # chapter 24 will be deleted
    extraction_ingest(book=_book(), number=3, payload=_payload(3))
    next(folder.glob("定稿/正文/*/第0024章.md")).unlink()
    Book.objects.filter(slug="demo-book").delete()
    report = book_rebuild(root=folder)
    assert report["ok"]
    assert report["journal"] == {"extraction.ingest": 1}
    skipped = [w for w in report["warnings"] if w["code"] == "journal_skipped"]
    assert skipped == [
        {
            "code": "journal_skipped",
            "file": LOG_PATH,
            "line": 2,
            "message": f"{LOG_PATH} 第2行（seq 1，extraction.ingest） 未能重放，已跳过：第24章不存在（《青岚剑录》）",
            "level": "warning",
        }
    ]
    assert StateChange.objects.filter(book=_book(), chapter=3, field="skills").count() == 1
    assert not JournalApplied.objects.filter(book=_book(), seq=1).exists()  # kept for a later sync
