"""Hostile and broken input answers with a clear error: path traversal in every parameter that names
a file, a section or a record; oversized bodies and files; regular-expression bombs."""

import json
import shutil

import pytest

from bookfiles.rebuilder import book_rebuild, book_sync
from core.models import Book, Chapter
from tests.conftest import DEMO_BOOK

TRAVERSALS = [
    "../../../../../../etc/passwd",
    "..%2F..%2F..%2Fetc%2Fpasswd",
    "....//....//etc/passwd",
    "/etc/passwd",
    "..\\..\\webnovel\\settings.py",
    "%2e%2e/%2e%2e/book.yaml",
    "../book.yaml",
    "设定/../../../webnovel/settings.py",
    "file:///etc/passwd",
    "\x00../../etc/passwd",
]
LEAKS = ("root:x:0:0", "SECRET_KEY", "DATABASES", "slug: demo-book")

# every operation with a parameter that names a file, a section or a record
NAMED = [
    ("/api/books/demo-book/characters/{v}", None),
    ("/api/books/demo-book/characters/{v}/card", None),
    ("/api/books/demo-book/characters/林风/section", "heading"),
    ("/api/books/demo-book/characters/{v}/section", "heading"),
    ("/api/books/demo-book/outline/section", "heading"),
    ("/api/books/demo-book/worldview/section", "heading"),
    ("/api/books/demo-book/volumes/1/outline/section", "heading"),
    ("/api/books/demo-book/threads/{v}", None),
    ("/api/books/demo-book/threads/{v}/history", None),
    ("/api/books/demo-book/threads/{v}/description", None),
    ("/api/books/demo-book/secrets/{v}", None),
    ("/api/books/demo-book/secrets/{v}/content", None),
    ("/api/books/demo-book/entities/{v}", None),
    ("/api/books/demo-book/entities/{v}/graph/mermaid", None),
    ("/api/books/demo-book/aliases/resolve", "alias"),
    ("/api/books/demo-book/timeline/character", "name"),
    ("/api/books/demo-book/memory/facts/{v}", None),
    ("/api/books/demo-book/reports/leaks", "secret"),
    ("/api/books/{v}/chapters", None),
]


@pytest.fixture
def demo(db):
    if not DEMO_BOOK.is_dir():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    assert book_rebuild(root=DEMO_BOOK)["ok"] is True
    return Book.objects.get(slug="demo-book")


@pytest.mark.parametrize(("url", "param"), NAMED)
def test_path_traversal_in_named_parameters_finds_nothing(demo, api, url, param):
    from urllib.parse import quote

    for value in TRAVERSALS:
        if param is None:
            response = api.get(url.replace("{v}", quote(value, safe="")))
        else:
            response = api.get(url.replace("{v}", "林风"), {param: value})
        assert response.status_code in (400, 403, 404, 422), (url, value, response.status_code)
        text = response.content.decode("utf-8", "replace")
        assert not any(leak in text for leak in LEAKS), (url, value)
        if response["Content-Type"].startswith("application/json"):
            assert response.json()["message"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/books/demo-book/chapters/1/extraction",
        "/api/books/demo-book/memory/import",
        "/api/books/demo-book/memory/facts",
        "/api/books/demo-book/story-system/build",
        "/api/books/demo-book/entities/merge",
    ],
)
def test_oversized_body_is_refused_with_413(demo, api, settings, url):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    body = json.dumps({"scenes": [], "pad": "林" * 40_000}, ensure_ascii=False)
    response = api.post(url, data=body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "message": "请求体过大：上限 65536 字节（0 MB）",
        "extra": {"limit_bytes": 65536},
    }
    assert Chapter.objects.filter(book=demo).count() == 24


@pytest.fixture
def demo_copy_db(db, demo_copy):
    assert book_rebuild(root=demo_copy)["ok"] is True
    return demo_copy


def test_oversized_file_fails_the_rebuild_clearly_and_changes_nothing(demo_copy_db, settings):
    root = demo_copy_db
    settings.WEBNOVEL_FILE_MAX_BYTES = 20_000
    big = root / "定稿" / "正文" / "第1卷" / "第0025章.md"
    big.write_text("---\ntitle: 巨章\n---\n" + "风" * 10_000, encoding="utf-8")
    report = book_rebuild(root=root)
    assert report["ok"] is False
    assert [(e["file"], e["code"]) for e in report["errors"]] == [("定稿/正文/第1卷/第0025章.md", "unreadable")]
    assert "文件过大（30022 字节，上限 20000 字节）" in report["errors"][0]["message"]
    assert Chapter.objects.filter(book__slug="demo-book").count() == 24


def test_oversized_file_is_reported_by_sync_and_the_rest_is_applied(demo_copy_db, settings):
    root = demo_copy_db
    settings.WEBNOVEL_FILE_MAX_BYTES = 20_000
    (root / "定稿" / "正文" / "第1卷" / "第0025章.md").write_text(
        "---\ntitle: 巨章\n---\n" + "风" * 10_000, encoding="utf-8"
    )
    shutil.copy(root / "定稿/正文/第2卷/第0024章.md", root / "定稿/正文/第2卷/第0026章.md")
    report = book_sync(book=Book.objects.get(slug="demo-book"))
    assert report["ok"] is True
    assert [u["file"] for u in report["unreadable"]] == ["定稿/正文/第1卷/第0025章.md"]
    assert report["added"] == ["定稿/正文/第2卷/第0026章.md"]
    numbers = set(Chapter.objects.filter(book__slug="demo-book").values_list("number", flat=True))
    assert 26 in numbers and 25 not in numbers


@pytest.fixture
def bomb_book(db, tmp_path):
    """A book whose chapter invites catastrophic backtracking: 'a' × 30,000 then '!'."""
    root = tmp_path / "bomb"
    (root / "定稿" / "正文").mkdir(parents=True)
    (root / "book.yaml").write_text("slug: bomb\ntitle: 回溯\n", encoding="utf-8")
    for n in (1, 2):
        (root / "定稿" / "正文" / f"第000{n}章.md").write_text(
            "---\ntitle: 长行\n---\n" + "a" * 30_000 + "!\n", encoding="utf-8"
        )
    assert book_rebuild(root=root)["ok"] is True


@pytest.mark.slow  # each bomb runs into the regex timeout: ~20 s in all
@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)+$", "(a*)*b", "(?:a+){2,}x", "(.*a){25}"])
def test_regex_bombs_end_in_a_result_or_a_clear_timeout(bomb_book, api, pattern):
    response = api.get("/api/books/bomb/search/regex", {"pattern": pattern})
    assert response.status_code in (200, 422)
    if response.status_code == 422:
        assert "超时" in response.json()["message"]
    else:
        assert response.json()["pattern"] == pattern


@pytest.mark.parametrize(
    ("url", "params", "needle"),
    [
        ("/api/books/bomb/search/regex", {"pattern": "a" * 1001}, "正则表达式过长"),
        ("/api/books/bomb/search/regex", {"pattern": "(unclosed"}, "正则"),
        ("/api/books/bomb/search", {"q": "a" * 10_000}, "200"),
        ("/api/books/bomb/search", {"q": "a", "limit": "100000"}, "limit"),
    ],
)
def test_oversized_or_broken_queries_are_refused_clearly(bomb_book, api, url, params, needle):
    response = api.get(url, params)
    assert response.status_code == 422
    assert needle in response.json()["message"]
