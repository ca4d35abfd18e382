"""The reference index kept on disk (WEBNOVEL_REFERENCE_INDEX_DIR): a fresh process loads it instead of
rebuilding, answers alike, and a library write names a new file (the old one is removed)."""

import pytest

from storysystem import search
from storysystem.models import ReferenceEntry
from storysystem.selectors import reference_search
from storysystem.services import entry_save, library_touch

pytestmark = pytest.mark.django_db


def _unbuildable(**kwargs):
    raise AssertionError("the index was rebuilt instead of loaded from its file")


@pytest.fixture
def disk(settings, tmp_path, monkeypatch):
    settings.WEBNOVEL_REFERENCE_INDEX_DIR = tmp_path
    monkeypatch.setattr(search, "_cached", None)
    library_touch()
    return tmp_path


def test_a_fresh_process_loads_the_index_from_its_file_and_answers_alike(disk, monkeypatch):
    built = reference_search(query="签到系统", max_results=20)
    assert "S-SY-003" in [r["code"] for r in built["results"]]
    files = list(disk.glob("*.marshal"))
    assert len(files) == 1
    monkeypatch.setattr(search, "_cached", None)  # what a new process starts with
    monkeypatch.setattr(search, "index_build", _unbuildable)
    assert reference_search(query="签到系统", max_results=20) == built
    assert len(search.index_get().docs) == ReferenceEntry.objects.filter(table__key_column="编号").count()


def test_a_library_write_names_a_new_file_and_removes_the_old(disk, monkeypatch):
    assert reference_search(query="量子纠缠")["total"] == 0
    (before,) = disk.glob("*.marshal")
    entry = ReferenceEntry.objects.get(table__library__name="seed", code="S-SY-003")
    entry.keywords += "|量子纠缠"
    entry_save(entry=entry)
    assert [r["code"] for r in reference_search(query="量子纠缠")["results"]] == ["S-SY-003"]
    (after,) = disk.glob("*.marshal")
    assert after != before
    monkeypatch.setattr(search, "_cached", None)
    monkeypatch.setattr(search, "index_build", _unbuildable)
    assert [r["code"] for r in reference_search(query="量子纠缠")["results"]] == ["S-SY-003"]


def test_a_broken_file_is_rebuilt_and_replaced(disk, monkeypatch, caplog):
    built = reference_search(query="签到系统")
    (path,) = disk.glob("*.marshal")
    path.write_bytes(b"\x00not an index")
    monkeypatch.setattr(search, "_cached", None)
    assert reference_search(query="签到系统") == built
    assert "无法读取" in caplog.text
    monkeypatch.setattr(search, "_cached", None)
    monkeypatch.setattr(search, "index_build", _unbuildable)
    assert reference_search(query="签到系统") == built


def test_without_a_folder_nothing_is_written(settings, tmp_path, monkeypatch):
    settings.WEBNOVEL_REFERENCE_INDEX_DIR = None
    monkeypatch.setattr(search, "_cached", None)
    library_touch()
    assert reference_search(query="签到系统")["total"] > 0
    assert list(tmp_path.iterdir()) == []


def test_the_loaded_index_finds_every_term_with_the_built_runs(disk, monkeypatch):
    reference_search(query="签到系统")
    built = search.index_get()
    monkeypatch.setattr(search, "_cached", None)
    monkeypatch.setattr(search, "index_build", _unbuildable)
    loaded = search.index_get()
    assert loaded is not built and loaded.postings.slots == {}  # nothing decoded before a search
    terms = built.postings.terms()
    assert sorted(loaded.postings.terms()) == sorted(terms)
    for term in terms:
        assert loaded.postings.get(term) == built.postings.get(term), term
    for missing in ("", "量子纠缠", "\uffff", "\x00"):
        assert loaded.postings.get(missing) is None
    assert [d.payload for d in loaded.docs] == [d.payload for d in built.docs]


def test_a_search_on_a_loaded_index_decodes_only_its_hits(disk, monkeypatch):
    reference_search(query="签到系统")
    monkeypatch.setattr(search, "_cached", None)
    answer = reference_search(query="签到系统", max_results=2)
    assert answer["total"] == 3 and len(answer["results"]) == 2
    decoded = [d.code for d in search.index_get().docs if d._payload is not None]
    assert sorted(decoded) == sorted(r["code"] for r in answer["results"])


def test_a_damaged_byte_is_caught_by_the_checksum_and_the_index_rebuilt(disk, monkeypatch, caplog):
    built = reference_search(query="签到系统")
    (path,) = disk.glob("*.marshal")
    data = bytearray(path.read_bytes())
    assert data[:8] == search._DISK_MAGIC
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    monkeypatch.setattr(search, "_cached", None)
    assert reference_search(query="签到系统") == built
    assert "无法读取" in caplog.text
    monkeypatch.setattr(search, "_cached", None)
    monkeypatch.setattr(search, "index_build", _unbuildable)
    assert reference_search(query="签到系统") == built
