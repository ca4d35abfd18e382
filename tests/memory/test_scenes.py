"""Scene chunks: a chapter with an ingested extraction is recalled by the Data Agent's scenes."""

import pytest

from core.models import Chapter
from entities.services.ingest import extraction_ingest
from memory.models import Chunk
from memory.orchestrator import build_memory_pack
from memory.retrieval import scene_chunk_texts, scenes_split
from memory.tokens import tokens_estimate

SCENES = [
    # listed out of order on purpose: chunks follow the scene index
    {
        "index": 2,
        "start_line": 4,
        "end_line": 5,
        "location": "演武场",
        "summary": "苏晴当众挑落外门弟子的木剑",
        "characters": ["苏晴", "林风"],
    },
    {
        "index": 1,
        "start_line": 1,
        "end_line": 1,
        "location": "后山石洞",
        "summary": "林风在后山石洞发现一面青铜古镜",
        "characters": ["林风"],
    },
]


def _line(p):
    return f"第2章第{p}段：林风握紧断剑，雨声如注，剑鸣隐隐。" * 3


SCENE_0 = f"林风在后山石洞发现一面青铜古镜\n（地点：后山石洞；人物：林风）\n{_line(1)}"
SCENE_1 = f"苏晴当众挑落外门弟子的木剑\n（地点：演武场；人物：苏晴、林风）\n{_line(4)}\n{_line(5)}"


def _ingest(book, chapter, scenes, capture):
    with capture(execute=True):
        extraction_ingest(book=book, number=chapter, payload={"scenes": scenes})


def _scene_chunks(book, chapter):
    rows = Chunk.objects.filter(book=book, chapter=chapter, kind="scene").order_by("order")
    return [(f"chunk:{c.chapter}:{c.kind}:{c.order}", c.text) for c in rows]


def _episodic(pack, chapter):
    return [(i["id"], i["tokens"]) for i in pack["items"] if i["id"].startswith(f"chunk:{chapter}:")]


@pytest.fixture
def ingested(filled, django_capture_on_commit_callbacks):
    # a file hash, as a rebuilt chapter has: unchanged chapters are then skipped by the indexer
    Chapter.objects.filter(book=filled, number=2).update(content_hash="2" * 40)
    _ingest(filled, 2, SCENES, django_capture_on_commit_callbacks)
    return filled


def test_scene_texts_follow_the_index_and_cut_the_body():
    body = "甲\n\n乙\n" + "丙" * 500
    texts = scene_chunk_texts(
        scenes=[
            {"index": 2, "start_line": 3, "end_line": 4, "summary": "二"},
            {"index": 1, "start_line": 1, "end_line": 3, "location": "山门", "characters": ["甲"]},
            {"index": 3},  # nothing to say: left out
        ],
        body=body,
    )
    assert texts == ["（地点：山门；人物：甲）\n甲\n乙", "二\n乙\n" + "丙" * 398 + "……"]
    # a hand-edited row of another shape is read as far as it makes sense
    assert scene_chunk_texts(scenes=["甲", {"summary": "乙", "characters": "丙", "start_line": "1"}], body=body) == [
        "乙"
    ]
    assert scene_chunk_texts(scenes={"summary": "乙"}, body=body) == []


def test_an_ingested_chapter_is_chunked_by_its_scenes(ingested):
    assert _scene_chunks(ingested, 2) == [("chunk:2:scene:0", SCENE_0), ("chunk:2:scene:1", SCENE_1)]
    # the cast feeds the name terms that on-stage names in a query match
    terms = Chunk.objects.get(book=ingested, chapter=2, kind="scene", order=1).terms.split()
    assert {"@苏晴", "@林风"} <= set(terms)
    # the chapter summary is still its own chunk
    assert Chunk.objects.filter(book=ingested, chapter=2, kind="summary").count() == 1


def test_a_query_on_a_scene_summary_recalls_that_scene_first(ingested):
    pack = build_memory_pack(book=ingested, number=6, task="query", query="青铜古镜", budget_tokens=4000)
    episodic = [i for i in pack["items"] if i["layer"] == "episodic"]
    assert episodic[0]["id"] == "chunk:2:scene:0"
    assert episodic[0]["included"] is True
    assert episodic[0]["title"] == "相关回忆·第2章场景1（相关度第1）"
    assert f"\n{SCENE_0}\n" in pack["text"]
    # every chunk recalled from chapter 2 is one of its two scenes or its summary, at a known cost
    block = "【{}】\n{}\n"
    tokens_0 = tokens_estimate(block.format(episodic[0]["title"], SCENE_0))
    assert (episodic[0]["tokens"], tokens_0) == (122, 122)
    assert {i for i, _ in _episodic(pack, 2)} <= {"chunk:2:scene:0", "chunk:2:scene:1", "chunk:2:summary:0"}
    again = build_memory_pack(book=ingested, number=6, task="query", query="青铜古镜", budget_tokens=4000)
    assert again == pack


def test_the_scene_chunks_are_the_chapters_only_scene_candidates(ingested):
    pack = build_memory_pack(
        book=ingested, number=6, task="query", query="后山石洞 演武场 木剑 古镜", budget_tokens=4000
    )
    scenes = [(i, t) for i, t in _episodic(pack, 2) if ":scene:" in i]
    assert scenes == [("chunk:2:scene:0", 122), ("chunk:2:scene:1", 194)]
    assert pack["used_tokens"] <= 4000


def test_reingesting_replaces_the_scene_chunks(ingested, django_capture_on_commit_callbacks):
    before = list(Chunk.objects.filter(book=ingested).order_by("id").values_list("id", flat=True))
    _ingest(ingested, 2, SCENES, django_capture_on_commit_callbacks)  # same scenes: nothing rebuilt
    assert list(Chunk.objects.filter(book=ingested).order_by("id").values_list("id", flat=True)) == before
    _ingest(
        ingested,
        2,
        [{"index": 1, "location": "藏经阁", "summary": "林风在藏经阁翻到一卷残破剑谱", "characters": ["林风"]}],
        django_capture_on_commit_callbacks,
    )
    assert _scene_chunks(ingested, 2) == [
        ("chunk:2:scene:0", "林风在藏经阁翻到一卷残破剑谱\n（地点：藏经阁；人物：林风）")
    ]
    pack = build_memory_pack(book=ingested, number=6, task="query", query="青铜古镜", budget_tokens=4000)
    assert "青铜古镜" not in pack["text"]
    pack = build_memory_pack(book=ingested, number=6, task="query", query="残破剑谱", budget_tokens=4000)
    assert [i["id"] for i in pack["items"] if i["layer"] == "episodic"][0] == "chunk:2:scene:0"


def test_an_extraction_without_scenes_brings_back_the_body_slices(ingested, django_capture_on_commit_callbacks):
    _ingest(ingested, 2, [], django_capture_on_commit_callbacks)
    body = Chapter.objects.get(book=ingested, number=2).body
    assert [t for _, t in _scene_chunks(ingested, 2)] == scenes_split(body)


def test_a_chapter_without_extraction_keeps_body_slices(ingested):
    body = Chapter.objects.get(book=ingested, number=3).body
    slices = scenes_split(body)
    assert len(slices) == 1
    assert _scene_chunks(ingested, 3) == [(f"chunk:3:scene:{i}", t) for i, t in enumerate(slices)]
