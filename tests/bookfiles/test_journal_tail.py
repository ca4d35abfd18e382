"""The journal's file format under hostile edits (issue 25): a log saved without its final newline keeps
its events, a torn last line is never an event (cut inside a UTF-8 character too), one event is bounded at
write time and at read time, and the log names its book — a log copied in from another book is refused."""

import json
import shutil
from pathlib import Path

import pytest
from django.test import override_settings

import core.journal
from bookfiles.rebuilder import book_dump, book_rebuild, book_sync
from core.journal import LOG_PATH, journal_events
from core.models import Book, JournalApplied
from entities.services.ingest import extraction_ingest, extraction_parse
from kernel.exceptions import Conflict, InvalidInput
from memory.models import Fact
from memory.services import fact_observe
from tests.conftest import DEMO_BOOK_SOURCE
from webnovel.demo import DEMO_EXTRACTIONS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hooks")]


@pytest.fixture
def no_hooks():
    with override_settings(WEBNOVEL_AFTER_CHAPTER_HOOKS=[]):
        yield


def _copy(tmp_path: Path, name: str, slug: str | None = None) -> Path:
    if not (DEMO_BOOK_SOURCE / "book.yaml").is_file():
        pytest.skip("the demo book is absent")
    folder = Path(shutil.copytree(DEMO_BOOK_SOURCE, tmp_path / name, ignore=shutil.ignore_patterns(".journal")))
    if slug is not None:
        config = folder / "book.yaml"
        config.write_text(config.read_text(encoding="utf-8").replace("slug: demo-book", f"slug: {slug}"), "utf-8")
    return folder


@pytest.fixture
def folder(tmp_path) -> Path:
    return _copy(tmp_path, "demo-book")


def _book(slug: str = "demo-book") -> Book:
    return Book.objects.get(slug=slug)


def _ingest(chapter: int, slug: str = "demo-book") -> None:
    payload = extraction_parse(raw=(DEMO_EXTRACTIONS / f"第{chapter:04d}章.json").read_bytes())
    extraction_ingest(book=_book(slug), number=chapter, payload=payload)


def _fact(value: str = "剑老生前的佩剑", slug: str = "demo-book") -> Fact:
    return fact_observe(book=_book(slug), category="open_loops", subject="断剑", field="来历", value=value, number=3)


def _seqs(folder: Path) -> list[int]:
    return [json.loads(line)["seq"] for line in (folder / LOG_PATH).read_text(encoding="utf-8").splitlines()]


def _from_scratch(folder: Path, slug: str = "demo-book") -> str:
    Book.objects.filter(slug=slug).delete()
    report = book_rebuild(root=folder)
    assert report["ok"], report["errors"]
    return book_dump(book=_book(slug))


def test_a_log_saved_without_its_final_newline_keeps_its_last_event(folder):
    # J1: an editor that saves without a final newline made the next append cut the last committed event
    assert book_rebuild(root=folder)["ok"]
    _ingest(3)
    _ingest(8)
    log = folder / LOG_PATH
    log.write_bytes(log.read_bytes().rstrip(b"\n"))
    assert [e["seq"] for e in journal_events(root=folder)] == [1, 2]  # still an event
    _fact()
    assert _seqs(folder) == [0, 1, 2, 3]  # seq 2 kept (and its newline added), the fact is seq 3
    assert log.read_bytes().endswith(b"\n") and log.read_bytes().count(b"\n") == 4
    live = book_dump(book=_book())
    assert _from_scratch(folder) == live
    assert sorted(JournalApplied.objects.filter(book=_book()).values_list("seq", flat=True)) == [1, 2, 3]


def test_a_last_line_torn_inside_a_utf8_character_is_not_an_event(folder):
    # J2: sync and rebuild refused the book ("第N行不是 UTF-8 文本") when the cut fell inside a character
    assert book_rebuild(root=folder)["ok"]
    _ingest(3)
    log = folder / LOG_PATH
    torn = '{"seq": 2, "op": "memory.fact.observe", "key": "断剑"'.encode()
    cut = torn[: torn.index("剑".encode()) + 1]  # the first byte of 剑's three
    with open(log, "ab") as fh:
        fh.write(cut)
    assert [e["seq"] for e in journal_events(root=folder)] == [1]
    assert book_sync(book=_book())["ok"]
    live = book_dump(book=_book())
    assert _from_scratch(folder) == live
    _fact()  # the next append cuts the torn line
    assert _seqs(folder) == [0, 1, 2]
    # a whole line that is not UTF-8 (not the torn last one) is still named
    with open(log, "ab") as fh:
        fh.write(b'{"seq": 3, "op": "x\xff"}\n')
    with pytest.raises(InvalidInput, match=r"第4行不是 UTF-8 文本"):
        journal_events(root=folder)


def test_an_event_over_the_cap_is_refused_at_write_time_with_nothing_written(folder):
    # J3: a 100 MB fact value was accepted, and replayed at 1.2 GB RSS
    assert book_rebuild(root=folder)["ok"]
    _ingest(3)
    log = folder / LOG_PATH
    before = log.read_bytes()
    big = "剑" * (core.journal.MAX_EVENT_BYTES // 3 + 1)  # 3 bytes each in UTF-8: just over the cap
    with pytest.raises(InvalidInput) as err:
        _fact(value=big)
    assert err.value.extra["code"] == "journal_event_too_large"
    assert err.value.extra["max_bytes"] == 16 << 20 and err.value.extra["bytes"] > 16 << 20
    assert "单个事件上限 16777216 字节" in err.value.message and "未写入任何内容" in err.value.message
    assert log.read_bytes() == before
    assert not Fact.objects.filter(book=_book(), subject="断剑").exists()
    _fact(value="剑" * 1000)  # under the cap: written
    assert _seqs(folder) == [0, 1, 2]


def test_an_ingestion_over_the_cap_leaves_no_attachment(folder, monkeypatch):
    assert book_rebuild(root=folder)["ok"]
    monkeypatch.setattr(core.journal, "MAX_EVENT_BYTES", 500)
    with pytest.raises(InvalidInput, match="单个事件上限 500 字节"):
        _ingest(3)
    assert not (folder / ".journal").exists()  # neither the log nor the extraction's copy


def test_a_log_line_over_the_cap_is_refused_before_it_is_read_whole(folder, monkeypatch):
    assert book_rebuild(root=folder)["ok"]
    _ingest(3)
    _fact(value="剑" * 1000)
    monkeypatch.setattr(core.journal, "MAX_EVENT_BYTES", 2500)  # the fact line (3 KB) is now over it
    Book.objects.filter(slug="demo-book").delete()
    with pytest.raises(InvalidInput) as err:
        book_rebuild(root=folder)
    assert err.value.extra == {"path": LOG_PATH, "line": 3, "code": "journal_event_too_large", "max_bytes": 2500}
    assert err.value.message.startswith(f"{LOG_PATH} 第3行超过单个事件的上限 2500 字节")
    assert not Book.objects.filter(slug="demo-book").exists()  # the rebuild's transaction rolled back


def test_a_log_copied_in_from_another_book_is_refused(tmp_path):
    # The demo's .journal/ travelled with every copy of the demo and was replayed into whatever book it landed in.
    demo = _copy(tmp_path, "demo-book")
    assert book_rebuild(root=demo)["ok"]
    _ingest(3)
    _fact()
    other = _copy(tmp_path, "other", slug="other-book")
    shutil.copytree(demo / ".journal", other / ".journal")
    copied = (other / LOG_PATH).read_bytes()
    with pytest.raises(Conflict) as err:
        book_rebuild(root=other)
    assert err.value.extra["code"] == "journal_foreign"
    assert (err.value.extra["book"], err.value.extra["journal_book"]) == ("other-book", "demo-book")
    assert err.value.extra["journal_id"] == _book().journal_id
    assert "属于另一本书" in err.value.message and "移走 .journal/" in err.value.message
    assert not Book.objects.filter(slug="other-book").exists()
    # without its log the copy rebuilds; a log put back later is refused by sync and by the next write
    shutil.move(other / ".journal", tmp_path / "moved")
    assert book_rebuild(root=other)["ok"]
    assert not Fact.objects.filter(book=_book("other-book"), subject="断剑").exists()
    shutil.move(tmp_path / "moved", other / ".journal")
    with pytest.raises(Conflict, match="属于另一本书"):
        book_sync(book=_book("other-book"))
    with pytest.raises(Conflict, match="属于另一本书"):
        _fact(slug="other-book")
    assert (other / LOG_PATH).read_bytes() == copied
    assert not Fact.objects.filter(book=_book("other-book")).exists()


def test_a_log_of_the_same_slug_but_another_id_is_refused(tmp_path):
    # two folders of one slug, each with its own log (two machines that each made the book)
    first = _copy(tmp_path, "a")
    assert book_rebuild(root=first)["ok"]
    _fact()
    first_id = _book().journal_id
    second = _copy(tmp_path, "b")
    Book.objects.all().delete()
    assert book_rebuild(root=second)["ok"]
    _ingest(3)
    assert _book().journal_id != first_id
    shutil.rmtree(second / ".journal")
    shutil.copytree(first / ".journal", second / ".journal")
    with pytest.raises(Conflict) as err:
        book_sync(book=_book())
    assert (err.value.extra["journal_id"], err.value.extra["recorded_id"]) == (first_id, _book().journal_id)


def test_an_old_log_without_identity_is_replayed_and_adopted_on_the_first_write(folder):
    assert book_rebuild(root=folder)["ok"]
    _ingest(3)
    _ingest(8)
    log = folder / LOG_PATH
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[1:]), encoding="utf-8")  # as the log was before issue 25
    live = book_dump(book=_book())
    assert _from_scratch(folder) == live  # replayed as it is
    assert _book().journal_id == ""
    _fact()
    text = log.read_text(encoding="utf-8").splitlines()
    header = json.loads(text[0])
    assert header == {"seq": 0, "op": "journal.book", "book": "demo-book", "id": _book().journal_id}
    assert len(header["id"]) == 32
    assert text[1:3] == [line.rstrip("\n") for line in lines[1:]] and _seqs(folder) == [0, 1, 2, 3]
    live = book_dump(book=_book())
    assert _from_scratch(folder) == live
    assert _book().journal_id == header["id"]  # a rebuild into an empty database records the log's id


def test_an_identity_line_in_the_middle_is_refused(folder):
    assert book_rebuild(root=folder)["ok"]
    _ingest(3)
    log = folder / LOG_PATH
    head = log.read_text(encoding="utf-8").splitlines()[0]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(head.replace(_book().journal_id, "0" * 32) + "\n")  # another log appended to this one
    with pytest.raises(InvalidInput, match="第3行：书籍标识（journal.book）只能在第1行"):
        book_sync(book=_book())
