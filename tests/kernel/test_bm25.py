"""kernel/bm25.py: the one BM25 module of the reference library's search and the memory's recall.

The expected hits were recorded on the tree before the two indexes shared it (the same queries, the same
scores as the answers round them), built fresh and loaded back from their disk files."""

import pytest

from kernel.bm25 import IndexFile, idf, length_norm
from tests.conftest import DEMO_BOOK, REFCSV

pytestmark = pytest.mark.django_db

# query → the refcsv library's top five (code, score), recorded before the change.
REFERENCE_HITS = {
    "签到系统": [("CH-074", 4.3912), ("NR-059", 4.3426), ("SY-003", 4.3164), ("TR-103", 4.1717), ("SP-086", 4.1384)],
    "退婚流打脸怎么写": [
        ("GR-001", 34.7414),
        ("TR-001", 20.5097),
        ("SP-004", 13.9069),
        ("TR-010", 13.4702),
        ("PA-094", 13.2242),
    ],
    "废柴逆袭 爽点": [
        ("SP-055", 10.1744),
        ("PA-081", 10.0031),
        ("TR-085", 9.5234),
        ("PA-087", 9.2248),
        ("GR-001", 7.7119),
    ],
}
# (query, max chapter) → the demo book's top five chunks (chapter, kind, order, score), recorded before.
MEMORY_HITS = {
    ("林风 剑冢", 24): [
        (8, "summary", 0, 5.7902),
        (14, "summary", 0, 5.685),
        (20, "summary", 0, 5.5516),
        (5, "summary", 0, 5.2828),
        (7, "summary", 0, 5.2242),
    ],
    ("青岚子 断剑", 12): [
        (7, "scene", 0, 7.6658),
        (11, "summary", 0, 6.2466),
        (1, "scene", 0, 4.7413),
        (5, "summary", 0, 4.2241),
        (11, "scene", 0, 4.1288),
    ],
    ("苏晴 夜探 藏经阁", 20): [
        (9, "summary", 0, 7.528),
        (9, "scene", 0, 3.3432),
        (16, "scene", 0, 3.2806),
        (6, "scene", 0, 3.1409),
    ],
}


def test_the_formulas_are_bm25s():
    assert idf(10, 1) == pytest.approx(1.9924, abs=1e-4)  # log(1 + 9.5 / 1.5)
    assert idf(10, 10) == pytest.approx(0.0465, abs=1e-4)  # a term in every document still counts a little
    assert length_norm(20, 10, 0.75) == 1.75
    assert length_norm(10, 10, 0.75) == 1.0


@pytest.fixture
def refcsv_only(db):
    """refcsv as the only enabled library (tests/storysystem/conftest.py's fixture of that name)."""
    if not (REFCSV / "题材与调性推理.csv").exists():
        pytest.skip(f"shared reference CSVs not found at {REFCSV}")
    from storysystem.models import ReferenceLibrary
    from storysystem.services import references_import

    references_import(directory=REFCSV, library="refcsv")
    ReferenceLibrary.objects.filter(name="seed").update(enabled=False)


def _reference_hits(query):
    from storysystem.selectors import reference_search

    answer = reference_search(query=query, max_results=5)
    return [(r["code"], r["score"]) for r in answer["results"]]


def test_reference_search_answers_as_before_built_and_loaded(refcsv_only, settings, tmp_path, monkeypatch):
    from storysystem import search

    settings.WEBNOVEL_REFERENCE_INDEX_DIR = tmp_path
    monkeypatch.setattr(search, "_cached", None)
    built = {q: _reference_hits(q) for q in REFERENCE_HITS}
    (path,) = tmp_path.glob("reference-*.marshal")
    monkeypatch.setattr(search, "_cached", None)
    monkeypatch.setattr(search, "index_build", None)  # a rebuild would fail: the file must answer
    loaded = {q: _reference_hits(q) for q in REFERENCE_HITS}
    assert built == loaded == REFERENCE_HITS


@pytest.fixture
def demo(db, django_capture_on_commit_callbacks):
    if not (DEMO_BOOK / "book.yaml").is_file():
        pytest.skip("examples/demo-book is absent")
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book

    with django_capture_on_commit_callbacks(execute=True):
        book_rebuild(root=DEMO_BOOK)
    return Book.objects.get(slug="demo-book")


def _memory_hits(book):
    from memory.retrieval import chunks_search

    out = {}
    for query, chapter in MEMORY_HITS:
        results, method = chunks_search(book=book, query=query, max_chapter=chapter, limit=5)
        assert method == "bm25"
        out[(query, chapter)] = [(r["chapter"], r["kind"], r["order"], r["score"]) for r in results]
    return out


def test_memory_recall_answers_as_before_built_and_loaded(demo, settings, tmp_path, monkeypatch):
    from memory import retrieval

    settings.WEBNOVEL_MEMORY_INDEX_DIR = tmp_path
    retrieval._index_cache.clear()
    built = _memory_hits(demo)
    assert len(list(tmp_path.glob("memory-*.marshal"))) == 1  # 24 chapters: one segment
    retrieval._index_cache.clear()
    monkeypatch.setattr(retrieval, "_segment_build", None)  # a rebuild would fail: the file must answer
    loaded = _memory_hits(demo)
    assert built == loaded == MEMORY_HITS


def test_a_damaged_file_is_refused_by_its_checksum_and_logged(settings, tmp_path, caplog):
    settings.WEBNOVEL_MEMORY_INDEX_DIR = tmp_path
    cache = IndexFile(setting="WEBNOVEL_MEMORY_INDEX_DIR", kind="memory", magic=b"TESTIDX1", label="测试索引缓存")
    path = cache.path(7, version="v1")
    cache.write(path, b"hello index")
    assert bytes(cache.read(path)) == b"hello index"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    assert cache.read(path) is None
    assert "测试索引缓存无法读取" in caplog.text
    assert cache.read(tmp_path / "absent.marshal") is None


def test_a_new_version_replaces_its_own_file_only(settings, tmp_path):
    settings.WEBNOVEL_MEMORY_INDEX_DIR = settings.WEBNOVEL_REFERENCE_INDEX_DIR = tmp_path
    memory = IndexFile(setting="WEBNOVEL_MEMORY_INDEX_DIR", kind="memory", magic=b"TESTIDX1", label="甲")
    reference = IndexFile(setting="WEBNOVEL_REFERENCE_INDEX_DIR", kind="reference", magic=b"TESTIDX2", label="乙")
    m1, m2, other = memory.path(7, version="v1"), memory.path(7, version="v2"), memory.path(8, version="v1")
    r1 = reference.path(version="v1")
    for cache, path in ((memory, m1), (memory, other), (reference, r1), (memory, m2)):
        cache.write(path, b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([m2.name, other.name, r1.name])
    settings.WEBNOVEL_MEMORY_INDEX_DIR = None
    assert memory.path(7, version="v1") is None
