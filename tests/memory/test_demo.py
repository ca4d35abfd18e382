"""End to end on the demo book: rebuild → after-chapter hook → memory → packs."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from memory.models import Chunk, Fact
from memory.orchestrator import build_memory_pack
from memory.tokens import tokens_estimate
from tests.conftest import DEMO_BOOK

pytestmark = pytest.mark.skipif(not (DEMO_BOOK / "book.yaml").is_file(), reason="examples/demo-book is absent")


@pytest.fixture
def demo(db, django_capture_on_commit_callbacks):
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book

    with django_capture_on_commit_callbacks(execute=True):
        report = book_rebuild(root=DEMO_BOOK)
    assert "memory.pipeline.memory_after_chapter" in report["hooks"]
    return Book.objects.get(slug="demo-book")


def test_rebuild_fills_the_memory_and_a_second_rebuild_changes_nothing(demo, django_capture_on_commit_callbacks):
    from bookfiles.rebuilder import book_rebuild

    loops = {
        f.subject: (f.status, f.source_chapter, f.closed_chapter)
        for f in Fact.objects.filter(book=demo, category="open_loops")
    }
    assert loops == {
        "伏笔-001": ("active", 1, None),
        "伏笔-002": ("outdated", 2, 14),
        "伏笔-003": ("active", 9, None),
        "伏笔-004": ("active", 6, None),
        "悬念-001": ("active", 5, None),
        "悬念-002": ("outdated", 12, 19),
        "悬念-003": ("active", 21, None),
        "感情线-001": ("active", 6, None),
        "感情线-002": ("outdated", 8, 8),
        "感情线-003": ("active", 15, None),
    }
    assert Fact.objects.filter(book=demo, category="world_rules", status="active").count() == 6
    before = sorted(Fact.objects.filter(book=demo).values_list("key", "status"))
    chunks = sorted(Chunk.objects.filter(book=demo).values_list("id", flat=True))
    assert len(chunks) > 24
    with django_capture_on_commit_callbacks(execute=True):
        book_rebuild(root=DEMO_BOOK)
    assert sorted(Fact.objects.filter(book=demo).values_list("key", "status")) == before
    # unchanged chapter files are not re-chunked
    assert sorted(Chunk.objects.filter(book=demo).values_list("id", flat=True)) == chunks


def test_demo_pack_for_chapter_21(demo):
    pack = build_memory_pack(book=demo, number=21, budget_tokens=2000)
    assert pack["used_tokens"] <= 2000
    included = [i["id"] for i in pack["items"] if i["included"]]
    assert included[:3] == ["outline:v2:s0", "outline:v2:s1", "outline:v2:s2"]
    assert "state:linfeng" in included and "tail:20" in included and "summary:20" in included
    # the reader learnt in chapter 20 who 剑老 is: that secret is no longer a constraint
    assert "剑老即开派祖师" not in pack["text"]
    assert "读者尚不知：沈墨是幽冥殿暗桩" in pack["text"]


def test_demo_context_command(demo):
    out = StringIO()
    call_command("story", "context", "demo-book", "13", "--budget-tokens", "1500", stdout=out)
    pack = json.loads(out.getvalue())
    assert (pack["chapter"], pack["as_of"], pack["budget_tokens"]) == (13, 12, 1500)
    assert pack["used_tokens"] <= 1500
    assert "读者尚不知：剑老即开派祖师（知情者：剑老、林风（第20章起））" in pack["text"]


def test_demo_sample_extractions_turn_into_scene_chunks(demo, django_capture_on_commit_callbacks):
    from webnovel.demo import demo_extractions_ingest

    with django_capture_on_commit_callbacks(execute=True):
        demo_extractions_ingest(book=demo)
    scenes = {
        n: [
            t.split("\n")[:2]
            for t in Chunk.objects.filter(book=demo, chapter=n, kind="scene").values_list("text", flat=True)
        ]
        for n in (3, 6, 8)
    }
    assert scenes == {
        3: [
            ["林风追问断剑中的残魂来历，剑老道破他经脉逆行", "（地点：后山瀑布；人物：林风、剑老）"],
            ["剑老授听雨诀，林风引气入体", "（地点：后山瀑布；人物：林风、剑老）"],
        ],
        6: [["苏晚晴替林风解围；沈墨袖中露出鬼脸令牌", "（地点：藏经阁外；人物：苏晚晴、林风、沈墨）"]],
        8: [["林风循剑鸣夜闯禁地，被沈墨拦下警告", "（地点：剑冢外石碑；人物：林风、沈墨）"]],
    }
    pack = build_memory_pack(book=demo, number=21, task="query", query="剑老授听雨诀", budget_tokens=2000)
    episodic = [(i["id"], i["tokens"], i["included"]) for i in pack["items"] if i["layer"] == "episodic"]
    assert episodic[0][0::2] == ("chunk:3:scene:1", True)
    # the scene's body lines follow its summary (line 10 of the body is blank: it starts at line 11)
    text = Chunk.objects.get(book=demo, chapter=3, kind="scene", order=1).text
    assert text.split("\n")[2].startswith("林风愣住了。四年的嘲笑")
    title = next(i["title"] for i in pack["items"] if i["id"] == "chunk:3:scene:1")
    assert episodic[0][1] == tokens_estimate(f"【{title}】\n{text}\n")
    assert pack["used_tokens"] <= 2000


def test_book_wide_facts_are_applied_again_only_when_their_inputs_or_the_facts_changed(demo, monkeypatch):
    """DerivationStamp: a finalize skips the book-wide facts while nothing they come from changed."""
    from memory import derivation
    from memory.models import DerivationStamp
    from threads.models import Thread

    calls = []
    real = derivation._apply

    def spy(**kwargs):
        calls.append(str(kwargs["origin"]))
        return real(**kwargs)

    monkeypatch.setattr(derivation, "_apply", spy)
    assert DerivationStamp.objects.filter(book=demo).count() == 1
    derivation.facts_derive(book=demo, chapters=[24])
    assert calls == ["derived"]  # book-wide inputs and setting facts unchanged: skipped

    def loop_fact():
        return Fact.objects.get(book=demo, origin="setting", category="open_loops", subject="悬念-001")

    loop = loop_fact()
    evidence = loop.evidence
    loop.evidence = []
    loop.save()  # a hand edit of a fact moves updated_at: the next derivation applies them again
    calls.clear()
    derivation.facts_derive(book=demo, chapters=[24])
    assert calls == ["setting", "derived"]
    assert loop_fact().evidence == evidence

    thread = Thread.objects.get(book=demo, thread_id="悬念-001")
    thread.title = "新的标题"
    thread.save()  # a hand edit of a thread (the admin) forgets the stamp's inputs
    assert DerivationStamp.objects.get(book=demo).inputs == ""
    calls.clear()
    derivation.facts_derive(book=demo, chapters=[24])
    assert calls == ["setting", "derived"]
    assert loop_fact().value.startswith("新的标题：")
    calls.clear()
    derivation.facts_derive(book=demo, chapters=[24])
    assert calls == ["derived"]

    # an entity's initial state changed by curation (not a file) is an input too
    from entities.models import Entity

    entity = Entity.objects.filter(book=demo).exclude(base_state={}).order_by("entity_id").first()
    Entity.objects.filter(pk=entity.pk).update(base_state={**entity.base_state, "境界": "化神"})
    calls.clear()
    derivation.facts_derive(book=demo, chapters=[24])
    assert calls == ["setting", "derived"]
    assert Fact.objects.get(book=demo, origin="setting", subject=entity.canonical_name, field="境界").value == "化神"


def _reference_bm25(rows, terms, *, max_chapter, exclude, limit):
    """BM25 written out plainly over every chunk (no index, no segments): the expected ranking."""
    import math
    from collections import Counter

    from memory.retrieval import K1, B

    docs = [(pk, ch, kind, order, Counter(t.split()), len(t.split())) for pk, ch, kind, order, t in rows]
    n = len(docs)
    avgdl = sum(d[5] for d in docs) / n
    scores = {}
    for term, qtf in Counter(terms).items():
        df = sum(1 for d in docs if term in d[4])
        if not any(term in d[4] for d in docs if d[1] <= max_chapter):
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for pk, ch, kind, order, tf, length in docs:
            if ch > max_chapter or (ch, kind) in exclude or term not in tf:
                continue
            norm = K1 * (1 - B + B * length / avgdl)
            scores[(pk, ch, kind, order)] = scores.get((pk, ch, kind, order), 0.0) + idf * qtf * (K1 + 1) * tf[term] / (
                tf[term] + norm
            )
    ranked = sorted(scores.items(), key=lambda kv: (-round(kv[1], 9), -kv[0][1], kv[0][2], kv[0][3]))
    return [(key[0], round(score, 6)) for key, score in ranked[:limit]]


@pytest.mark.parametrize("segment_chapters", [1, 5, 100])
def test_segmented_bm25_ranks_exactly_as_plain_bm25_over_the_whole_book(demo, monkeypatch, segment_chapters):
    from memory import retrieval

    monkeypatch.setattr(retrieval, "SEGMENT_CHAPTERS", segment_chapters)
    retrieval._index_cache.clear()
    index = retrieval.bm25_index(book=demo)
    assert len(index.segments) == {1: 24, 5: 5, 100: 1}[segment_chapters]
    rows = list(
        Chunk.objects.filter(book=demo)
        .order_by("chapter", "kind", "order")
        .values_list("id", "chapter", "kind", "order", "terms")
    )
    names = retrieval.name_index(book=demo)
    for query, max_chapter, exclude in [
        ("林风 剑冢", 24, set()),
        ("青岚子 断剑", 12, set()),
        ("剑鸣 夜探", 20, {(3, "summary"), (5, "scene")}),
        ("林风", 1, set()),
    ]:
        terms = retrieval.text_terms(query, names=names)
        got = [
            (index.ids[d], round(s, 6))
            for d, s in index.search(terms, max_chapter=max_chapter, exclude=exclude, limit=8)
        ]
        assert got == _reference_bm25(rows, terms, max_chapter=max_chapter, exclude=exclude, limit=8)
        assert got  # every query finds something in the demo book


def test_a_changed_chapter_rebuilds_only_its_segment(demo, monkeypatch, settings, tmp_path):
    from memory import retrieval
    from memory.pipeline import memory_after_chapter

    monkeypatch.setattr(retrieval, "SEGMENT_CHAPTERS", 5)
    settings.WEBNOVEL_MEMORY_INDEX_DIR = tmp_path
    retrieval._index_cache.clear()
    retrieval.bm25_index(book=demo)
    assert len(list(tmp_path.glob("*.marshal"))) == 5
    built = []
    real = retrieval._segment_build
    monkeypatch.setattr(retrieval, "_segment_build", lambda **kw: built.append(kw["number"]) or real(**kw))
    Chunk.objects.filter(book=demo, chapter=12).delete()  # chapter 12's chunks are made again
    memory_after_chapter(book=demo, numbers=[12], removed=[])
    index = retrieval.bm25_index(book=demo)
    assert built == [2]  # chapters 10–14
    assert Chunk.objects.filter(book=demo, chapter=12).count() > 0
    assert 12 in index.chapters
    assert len(list(tmp_path.glob("*.marshal"))) == 5  # the new version of segment 2 replaced the old file
    retrieval._index_cache.clear()
    built.clear()
    retrieval.bm25_index(book=demo)  # a fresh process: every segment from disk
    assert built == []
