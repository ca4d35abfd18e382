"""The error contract of the read interfaces, end to end: 401 / 403 / 404 / 409 / 422 JSON bodies
``{"message", "extra"}`` naming what was wrong, the same message from the ``story`` command (on
stderr, non-zero exit), and search that never hangs on a hostile regular expression."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core import search
from core.models import Book, Chapter, Document, Section, Volume
from core.services import apikey_create
from entities.models import Alias, Entity
from threads.models import Thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def book(db):
    book = Book.objects.create(slug="tiny", title="小书", root="/tmp/tiny")
    Volume.objects.create(book=book, number=1, name="卷一", start_chapter=1, end_chapter=2)
    Chapter.objects.create(book=book, number=1, volume=1, title="一", body="林风拔剑。\n\n剑光如雪。\n", word_count=8)
    Chapter.objects.create(book=book, number=2, volume=1, title="二", body="a" * 20000 + "b\n", word_count=20001)
    Thread.objects.create(book=book, thread_id="伏笔-001", type="伏笔", opened_chapter=1)
    doc = Document.objects.create(book=book, kind=Document.Kind.WORLDVIEW, key="世界观")
    Section.objects.create(document=doc, order=0, heading="境界", body="炼气→筑基")
    for name, kind in (("白鹭", "角色"), ("白鹭洲", "地点")):
        entity = Entity.objects.create(book=book, entity_id=f"e{kind}", type=kind, canonical_name=name + "x")
        Alias.objects.create(book=book, entity=entity, alias="白鹭")
    return book


def _error(resp, status: int) -> dict:
    assert resp.status_code == status, resp.content
    body = resp.json()
    assert set(body) == {"message", "extra"}
    return body


# ── auth ──


def test_reads_need_a_key_or_a_session(client, book):
    body = _error(client.get("/api/books/tiny/threads/伏笔-001"), 401)
    assert "X-API-Key" in body["message"]


def test_read_key_reads_but_cannot_write(client, book):
    _, raw = apikey_create(name="reader", scope="read")
    assert client.get("/api/books/tiny/threads/伏笔-001", HTTP_X_API_KEY=raw).status_code == 200
    resp = client.post("/api/books/tiny/entities/merge", {}, content_type="application/json", HTTP_X_API_KEY=raw)
    assert "只有读权限" in _error(resp, 403)["message"]


def test_book_scoped_key_opens_only_its_book(client, book):
    other = Book.objects.create(slug="other", root="/tmp/other")
    _, raw = apikey_create(name="one-book", scope="read", book=other)
    assert "tiny" in _error(client.get("/api/books/tiny/reports/stats", HTTP_X_API_KEY=raw), 403)["message"]
    assert client.get("/api/books/other/reports/stats", HTTP_X_API_KEY=raw).status_code == 200


def test_admin_session_reads(client, book, django_user_model):
    user = django_user_model.objects.create_superuser("admin", "a@example.com", "pw-123456")
    client.force_login(user)
    assert client.get("/api/books/tiny/chapters/1/summary").status_code == 200


# ── 404 naming what is missing ──


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/api/books/nobook/threads/伏笔-001", "nobook"),
        ("/api/books/tiny/chapters/99", "第99章"),
        ("/api/books/tiny/chapters/99/tail", "第99章"),
        ("/api/books/tiny/threads/伏笔-404", "伏笔-404"),
        ("/api/books/tiny/secrets/信息差-404", "信息差-404"),
        ("/api/books/tiny/worldview/section?heading=魔道", "魔道"),
        ("/api/books/tiny/volumes/7/outline", "第7卷"),
        ("/api/books/tiny/timeline/volumes/7", "第7卷"),
        ("/api/books/tiny/outline/ending", "总纲"),
        ("/api/books/tiny/characters/无名氏", "无名氏"),
    ],
)
def test_unknown_things_are_404_with_their_name(api, book, path, named):
    assert named in _error(api.get(path), 404)["message"]


def test_missing_section_lists_the_available_ones(api, book):
    body = _error(api.get("/api/books/tiny/worldview/section", {"heading": "魔道"}), 404)
    assert body["extra"] == {"section": "魔道", "available": ["境界"]}


def test_ambiguous_alias_is_409_listing_candidates(api, book):
    body = _error(api.get("/api/books/tiny/aliases/resolve", {"alias": "白鹭"}), 409)
    assert [c["type"] for c in body["extra"]["candidates"]] == ["地点", "角色"]


# ── 422 bad parameters ──


@pytest.mark.parametrize(
    ("path", "params", "words"),
    [
        ("/api/books/tiny/chapters/1/tail", {"chars": "many"}, "chars"),
        ("/api/books/tiny/chapters/1/tail", {"chars": 0}, "chars"),
        ("/api/books/tiny/chapters/recent-tails", {"count": 51}, "count"),
        ("/api/books/tiny/chapters/summaries", {"start": 5, "end": 2}, "5-2"),
        ("/api/books/tiny/chapters/summaries", {"start": 1}, "end"),
        ("/api/books/tiny/chapters", {"position": "高潮"}, "高潮"),
        ("/api/books/tiny/threads", {"type": "主线"}, "主线"),
        ("/api/books/tiny/threads/by-strength", {"strength": "极"}, "极"),
        ("/api/books/tiny/worldview/section", {}, "heading"),
        ("/api/books/tiny/search", {"q": "  "}, "搜索词"),
        ("/api/books/tiny/search", {"q": "剑", "limit": 0}, "limit"),
        # found by the schema fuzzer: FTS5's query parser stopped at the NUL ("unterminated string", a 500)
        ("/api/books/tiny/search", {"q": "a\x00b"}, "NUL"),
        ("/api/books/tiny/search", {"q": "\x00"}, "NUL"),
        ("/api/books/tiny/search/regex", {"pattern": "剑("}, "正则表达式无效"),
        ("/api/books/tiny/search/regex", {"pattern": "a" * 10_000}, "过长"),
    ],
)
def test_bad_parameters_are_422(api, book, path, params, words):
    assert words in _error(api.get(path, params), 422)["message"]


def test_hostile_regex_answers_422_within_its_budget(api, book, monkeypatch):
    monkeypatch.setattr(search, "REGEX_TIME_BUDGET", 0.3)
    body = _error(api.get("/api/books/tiny/search/regex", {"pattern": "(a+)+$"}), 422)
    assert "超时" in body["message"]
    assert body["extra"]["timeout_seconds"] == 0.3


def test_regex_search_finds_lines(api, book):
    data = api.get("/api/books/tiny/search/regex", {"pattern": "^剑.+雪"}).json()
    assert data == {"pattern": "^剑.+雪", "total": 1, "hits": [{"chapter": 1, "line": 3, "context": "剑光如雪。"}]}


# ── the command says the same ──


def test_story_command_prints_the_same_error_and_exits_non_zero(book, capsys):
    with pytest.raises(CommandError) as caught:
        call_command("story", "thread", "tiny", "伏笔-404")
    assert caught.value.returncode == 4
    printed = json.loads(capsys.readouterr().err)
    assert printed == {"message": "线索 '伏笔-404' 不存在（《小书》）", "extra": {"thread": "伏笔-404"}}


def test_story_command_unknown_book(db, capsys):
    with pytest.raises(CommandError, match="书籍 'nobook' 不存在"):
        call_command("story", "report-stats", "nobook")


def test_story_command_bad_parameter_is_422(book, capsys):
    with pytest.raises(CommandError, match="chars 必须在 1 到 20000 之间"):
        call_command("story", "chapter-tail", "tiny", "1", "--chars", "0")
    assert json.loads(capsys.readouterr().err)["extra"] == {"chars": 0}
