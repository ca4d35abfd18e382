"""``manage.py apikey create|list|revoke``."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from core.models import ApiKey, Book
from core.models.apikey import apikey_hash

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command("apikey", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def book():
    return Book.objects.create(slug="b1", title="书一", root="/tmp/b1")


def test_create_prints_the_raw_key_once_and_stores_its_hash(book):
    output = run("create", "--name", "agent", "--scope", "write", "--book", "b1")
    first, raw = output.strip().split("\n")
    assert first == "已创建密钥 agent（write，《书一》（b1））。请立即保存，它不会再显示："
    key = ApiKey.objects.get()
    assert raw.startswith("wn_")
    assert (key.name, key.scope, key.book, key.prefix, key.key_hash) == (
        "agent",
        "write",
        book,
        raw[:10],
        apikey_hash(raw),
    )
    assert raw not in run("list")


def test_create_json_defaults_to_read_for_all_books(client, book):
    result = json.loads(run("create", "--name", "reader", "--json"))
    assert (result["name"], result["scope"], result["book"], result["revoked"]) == ("reader", "read", None, False)
    assert result["prefix"] == result["key"][:10]
    assert client.get("/api/books/", HTTP_X_API_KEY=result["key"]).status_code == 200


def test_create_errors():
    with pytest.raises(CommandError, match="书籍 'nope' 不存在"):
        run("create", "--name", "x", "--book", "nope")
    with pytest.raises(CommandError, match="invalid choice"):
        run("create", "--name", "x", "--scope", "admin")
    assert ApiKey.objects.count() == 0


def test_list_and_revoke(client, book):
    a = json.loads(run("create", "--name", "a", "--json"))
    b = json.loads(run("create", "--name", "b", "--scope", "write", "--book", "b1", "--json"))
    assert run("list").strip().split("\n") == [
        f"{a['prefix']}\ta\tread\t*\t有效",
        f"{b['prefix']}\tb\twrite\tb1\t有效",
    ]
    assert run("revoke", a["prefix"]).strip() == f"已吊销 1 个以 {a['prefix']} 开头的密钥"
    assert run("list").strip().split("\n") == [f"{b['prefix']}\tb\twrite\tb1\t有效"]
    rows = json.loads(run("list", "--all", "--json"))
    assert [(r["name"], r["revoked"]) for r in rows] == [("a", True), ("b", False)]
    assert client.get("/api/books/", HTTP_X_API_KEY=a["key"]).status_code == 401
    with pytest.raises(CommandError, match=f"没有以 '{a['prefix']}' 开头的有效密钥"):
        run("revoke", a["prefix"])


def test_list_when_empty():
    assert run("list").strip() == "（没有密钥）"
    assert json.loads(run("list", "--json")) == []
