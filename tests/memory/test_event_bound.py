"""Issue 25: a memory write whose journal event would be over the journal's cap is refused before any row
is built (a 100 MB fact value used to be built into its rows first: the refusing process peaked at 1.05 GB;
bench/bench_fact_size.py measures it). The cap is lowered here so the values stay small."""

import pytest

import core.journal
from core.journal import LOG_PATH
from core.models import Book
from entities.models import LegacyRecord
from kernel.exceptions import InvalidInput
from memory.models import Fact, FactEvent
from memory.services import fact_observe, fact_revise, scratchpad_import

pytestmark = pytest.mark.django_db

CAP = 1000


@pytest.fixture
def book(tmp_path, monkeypatch):
    monkeypatch.setattr(core.journal, "MAX_EVENT_BYTES", CAP)
    return Book.objects.create(slug="bound", title="上限", root=str(tmp_path))


def _observe(book, value):
    return fact_observe(book=book, category="world_rules", subject="断剑", field="来历", value=value, number=1)


def test_a_fact_over_the_cap_is_refused_before_its_rows(book, tmp_path):
    _observe(book, "剑老生前的佩剑")
    log = (tmp_path / LOG_PATH).read_bytes()
    with pytest.raises(InvalidInput) as err:
        _observe(book, "剑" * 1001)
    # "至少 1005 字节": counted from the characters before anything was built (the journal's own check,
    # after the rows, names the exact size, 3,000+ bytes here)
    assert err.value.message == (
        "这次写入过大，无法记入书籍日志：至少 1005 字节，单个事件上限 1000 字节（memory.fact.observe）。"
        "未写入任何内容；请拆小后再写"
    )
    assert err.value.extra == {
        "code": "journal_event_too_large",
        "op": "memory.fact.observe",
        "bytes": 1005,
        "max_bytes": CAP,
    }
    assert Fact.objects.filter(book=book).count() == 1
    assert FactEvent.objects.filter(fact__book=book).count() == 1
    assert (tmp_path / LOG_PATH).read_bytes() == log


def test_an_import_over_the_cap_is_refused_before_its_rows(book):
    data = {"world_rules": [{"subject": "断剑", "field": "来历", "value": "剑" * 2000}], "odd_bucket": {"x": 1}}
    with pytest.raises(InvalidInput) as err:
        scratchpad_import(book=book, data=data)
    assert err.value.extra["op"] == "memory.import" and err.value.extra["bytes"] > CAP
    assert not Fact.objects.filter(book=book).exists()
    assert not LegacyRecord.objects.filter(book=book).exists()


def test_a_revision_over_the_cap_is_refused(book):
    fact = _observe(book, "剑老生前的佩剑")
    with pytest.raises(InvalidInput) as err:
        fact_revise(fact=fact, value="剑" * 1001, number=2)
    assert err.value.extra["op"] == "memory.fact.revise"
    assert Fact.objects.filter(book=book).count() == 1


def test_a_book_without_a_folder_journals_nothing_and_is_not_bounded(db, monkeypatch):
    monkeypatch.setattr(core.journal, "MAX_EVENT_BYTES", CAP)
    loose = Book.objects.create(slug="loose", title="无文件夹")
    assert _observe(loose, "剑" * 1001).value == "剑" * 1001
