"""The orchestrator: budget, determinism, as-of truth, tasks, the simple fallback, retrieval, diff."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from kernel.exceptions import InvalidInput
from memory.orchestrator import build_memory_pack, pack_diff
from memory.retrieval import scenes_split, text_terms
from memory.tokens import tokens_estimate, tokens_truncate


def test_token_estimate_rules():
    assert tokens_estimate("林风突破至炼气五层。") == 10
    assert tokens_estimate("realm: 斗者") == 2 + 1 + 2
    assert tokens_estimate("  \n") == 0
    assert tokens_truncate("一二三四五六七八九十", limit=5) == "一二三四…"
    assert tokens_truncate("一二三四五六七八九十", limit=5, keep_end=True) == "…七八九十"


def test_chinese_terms_are_bigrams_plus_names():
    assert text_terms("林风拾剑 ok") == ["林风", "风拾", "拾剑", "ok"]


def test_scenes_split_at_breaks_and_size():
    assert scenes_split("甲\n\n***\n\n乙\n丙") == ["甲", "乙\n丙"]


@pytest.mark.parametrize("budget", [150, 300, 600, 1200, 4000])
@pytest.mark.parametrize("chapter", [1, 4, 7])
def test_the_pack_never_exceeds_the_budget(filled, budget, chapter):
    pack = build_memory_pack(book=filled, number=chapter, task="write", budget_tokens=budget)
    assert pack["used_tokens"] <= budget
    assert tokens_estimate(pack["text"]) == pack["used_tokens"]
    assert sum(pack["layers"].values()) == pack["used_tokens"]
    assert all(i["reason"] for i in pack["items"])


def test_same_inputs_same_pack(filled):
    a = build_memory_pack(book=filled, number=7, task="write", budget_tokens=900)
    b = build_memory_pack(book=filled, number=7, task="write", budget_tokens=900)
    assert json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


def test_a_pack_for_an_old_chapter_sees_that_chapters_truth(filled):
    pack = build_memory_pack(book=filled, number=3, task="write", budget_tokens=4000)
    assert pack["as_of"] == 2
    assert "境界：炼气四层" in pack["text"]
    assert "炼气五层" not in pack["text"].split("【主角状态·林风（截至第2章）】\n")[1].split("\n")[0]
    assert "信息差-001" not in pack["text"]  # registered in chapter 3


def test_no_outdated_fact_in_a_write_pack(filled):
    from memory.models import Fact

    pack = build_memory_pack(book=filled, number=7, task="write", budget_tokens=4000)
    keys = [i["id"].removeprefix("fact:") for i in pack["items"] if i["included"] and i["id"].startswith("fact:")]
    statuses = set(Fact.objects.filter(book=filled, key__in=keys).values_list("status", flat=True))
    assert statuses == {"active"}
    assert len(keys) == 9


def test_review_pack_includes_the_chapter_itself(filled):
    pack = build_memory_pack(book=filled, number=4, task="review", budget_tokens=4000)
    assert pack["as_of"] == 4
    first = [(i["id"], i["priority"], i["included"]) for i in pack["items"][:3]]
    assert first == [("outline:v1:s0", 100, True), ("summary:4", 97, True), ("fact:s-6c56877a908f71e9", 95, True)]
    assert "境界：炼气五层" in pack["text"]


def test_query_pack_ranks_retrieval_high(filled):
    pack = build_memory_pack(book=filled, number=6, task="query", budget_tokens=4000, query="藏经阁 残图")
    chunks = [(i["id"], i["priority"]) for i in pack["items"] if i["layer"] == "episodic"]
    assert chunks[0] == ("chunk:4:summary:0", 85)
    assert pack["retrieval"] == "bm25"


def test_simple_mode_is_a_switch(filled, settings):
    pack = build_memory_pack(book=filled, number=7, budget_tokens=4000, mode="simple")
    assert pack["mode"] == "simple"
    assert {i["layer"] for i in pack["items"]} == {"working"}
    assert [i["id"] for i in pack["items"]] == ["outline:v1:s3", "state:linfeng", "summary:6", "summary:5", "summary:4"]
    settings.WEBNOVEL_MEMORY_PACK = "simple"
    assert build_memory_pack(book=filled, number=7, budget_tokens=4000)["mode"] == "simple"


def test_bad_arguments_are_domain_errors(filled):
    with pytest.raises(InvalidInput, match="未知的任务 'plan'"):
        build_memory_pack(book=filled, number=7, task="plan")
    with pytest.raises(InvalidInput, match="预算必须在 100 到 200000 tokens 之间，收到 10"):
        build_memory_pack(book=filled, number=7, budget_tokens=10)
    with pytest.raises(InvalidInput, match="章节号必须是正整数"):
        build_memory_pack(book=filled, number=0)


def test_pack_diff_shows_state_changes(filled):
    diff = pack_diff(book=filled, chapter_a=3, chapter_b=7, budget_tokens=4000)
    changed = {c["id"]: c for c in diff["changed"]}
    assert changed["state:linfeng"]["before"] == "位置：青岚宗；境界：炼气四层"
    assert changed["state:linfeng"]["after"] == "位置：青岚宗；持有物：残图；境界：炼气五层"
    assert "outline:v1:s3" in {i["id"] for i in diff["only_b"]}
    assert "outline:v1:s0" in {i["id"] for i in diff["only_a"]}


def test_embeddings_unreachable_fall_back_to_bm25(filled, settings):
    settings.WEBNOVEL_EMBEDDINGS_URL = "http://127.0.0.1:9/v1"
    settings.WEBNOVEL_EMBEDDINGS_MODEL = "bge-m3"
    settings.WEBNOVEL_EMBEDDINGS_TIMEOUT = "1"
    pack = build_memory_pack(book=filled, number=7, budget_tokens=4000)
    assert pack["retrieval"] == "bm25（嵌入失败，已回退：URLError）"
    assert any(i["layer"] == "episodic" and i["included"] for i in pack["items"])


class _Embeddings(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 — http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        # A toy embedding: the query (a few characters) and texts about the rainy night point the same way.
        data = [{"index": i, "embedding": [float(len(t) < 8 or "雨夜" in t), 0.1]} for i, t in enumerate(body["input"])]
        raw = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


def test_embeddings_rerank_when_the_endpoint_answers(filled, settings):
    server = HTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        settings.WEBNOVEL_EMBEDDINGS_URL = f"http://127.0.0.1:{server.server_port}/v1"
        settings.WEBNOVEL_EMBEDDINGS_MODEL = "toy"
        pack = build_memory_pack(book=filled, number=7, task="query", budget_tokens=4000, query="断剑 剑鸣")
    finally:
        server.shutdown()
        server.server_close()
    assert pack["retrieval"] == "embeddings"
    chunks = [i for i in pack["items"] if i["layer"] == "episodic"]
    assert chunks[0]["id"] == "chunk:1:summary:0"
    settings.WEBNOVEL_EMBEDDINGS_URL = ""
    bm25 = build_memory_pack(book=filled, number=7, task="query", budget_tokens=4000, query="断剑 剑鸣")
    assert bm25["retrieval"] == "bm25"
    assert [i["id"] for i in bm25["items"] if i["layer"] == "episodic"][0] == "chunk:6:scene:0"


def test_open_loops_due_soon_rank_higher(filled):
    from memory.models import Fact

    key = "fact:" + Fact.objects.get(book=filled, category="open_loops", subject="伏笔-001").key
    early = {i["id"]: i for i in build_memory_pack(book=filled, number=7, budget_tokens=4000)["items"]}
    late = {i["id"]: i for i in build_memory_pack(book=filled, number=36, budget_tokens=4000)["items"]}
    assert (early[key]["priority"], late[key]["priority"]) == (70, 78)
    hook = [(i["priority"], i["included"], i["reason"]) for i in late.values() if "章末钩子" in i["title"]]
    assert hook == [
        (60, True, "纳入（优先级 60）"),
        (0, False, "已过时：被第6章的新值取代"),
    ]  # chapter 6's hook is stale


def test_the_name_index_is_the_entities_automaton_and_follows_its_invalidation(book):
    from entities.mentions import matcher_get
    from entities.models import Alias, Entity
    from memory.retrieval import name_index

    index = name_index(book=book)
    assert index.automaton is matcher_get(book=book).automaton  # one automaton per book, not two
    assert name_index(book=book) is index  # kept as long as the entities' matcher
    lin = Entity.objects.get(book=book, entity_id="linfeng")
    assert index.characters["小风"] == (lin.pk,)
    Alias.objects.create(book=book, entity=lin, alias="风")  # a one-character name: in the automaton, not a term
    Alias.objects.create(book=book, entity=lin, alias="林师兄")
    fresh = name_index(book=book)  # the Alias signal invalidated the matcher, and with it the name index
    assert fresh is not index
    assert fresh.characters["林师兄"] == (lin.pk,)
    assert list(fresh.found("林师兄与苏晴，风起")) == ["林师兄", "苏晴"]
    assert text_terms("林师兄", names=fresh) == ["林师", "师兄", "@林师兄"]


def test_chunk_terms_are_the_joined_text_terms_of_each_text(book):
    """The rebuild's batch (numpy bigrams, a names-only automaton) gives each chunk exactly the terms
    string the text-by-text tokenizer gives, overlapping names, ASCII words and odd characters included."""
    from entities.models import Alias, Entity
    from memory.retrieval import chunk_terms, name_index

    lin = Entity.objects.get(book=book, entity_id="linfeng")
    Alias.objects.create(book=book, entity=lin, alias="林师兄")
    Alias.objects.create(book=book, entity=lin, alias="师兄")  # ends where 林师兄 ends: both are terms
    Alias.objects.create(book=book, entity=lin, alias="风")  # one character: never a term
    names = name_index(book=book)
    texts = ["林师兄与苏晴，风起 OK x2", "", "剑", "abc", "㐀丂\uf900😀师兄\n林风", "林风拾剑"]
    got = chunk_terms(texts, names=names)
    assert got == [" ".join(text_terms(t, names=names)) for t in texts]
    assert got[0] == "林师 师兄 兄与 与苏 苏晴 风起 ok x2 @林师兄 @师兄 @苏晴"
    assert got[1:4] == ["", "剑", "abc"]
    assert names.name_terms("林师兄") == ["@林师兄", "@师兄"]
