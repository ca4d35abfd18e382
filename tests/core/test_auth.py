import pytest

from core.models import ApiKey, Book
from core.services import apikey_create

pytestmark = pytest.mark.django_db


def test_api_requires_auth(client):
    resp = client.get("/api/books/")
    assert resp.status_code == 401
    assert resp.json()["message"].startswith("需要认证")


def test_api_key_lists_books(api):
    Book.objects.create(slug="b1", title="书一", root="/tmp/b1")
    resp = api.get("/api/books/")
    assert resp.status_code == 200
    assert resp.json() == [{"slug": "b1", "title": "书一", "genre": "", "chapters": 0, "current_chapter": None}]


def test_key_is_stored_hashed_and_revocable(client):
    key, raw = apikey_create(name="agent", scope="read")
    assert raw.startswith("wn_") and raw not in key.key_hash
    assert ApiKey.objects.get(pk=key.pk).key_hash != raw
    assert client.get("/api/books/", HTTP_X_API_KEY=raw).status_code == 200
    assert client.get("/api/books/", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    key.revoked = True
    key.save()
    assert client.get("/api/books/", HTTP_X_API_KEY=raw).status_code == 401


def test_last_used_is_written_at_most_once_a_minute(client):
    from datetime import timedelta

    from django.utils import timezone

    key, raw = apikey_create(name="agent", scope="read")
    assert client.get("/api/books/", HTTP_X_API_KEY=raw).status_code == 200
    first = ApiKey.objects.get(pk=key.pk).last_used_at
    assert first is not None
    assert client.get("/api/books/", HTTP_X_API_KEY=raw).status_code == 200
    assert ApiKey.objects.get(pk=key.pk).last_used_at == first
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now() - timedelta(minutes=5))
    assert client.get("/api/books/", HTTP_X_API_KEY=raw).status_code == 200
    assert ApiKey.objects.get(pk=key.pk).last_used_at > first


def test_api_answers_chinese_as_utf8_text(api):
    Book.objects.create(slug="b2", title="青岚剑录", root="/tmp/b2")
    resp = api.get("/api/books/")
    assert resp["Content-Type"].startswith("application/json")
    assert "青岚剑录".encode() in resp.content
    assert b"\\u" not in resp.content


def test_a_body_that_is_not_json_gets_a_chinese_message_with_its_position(api):
    Book.objects.create(slug="b3", title="书三", root="/tmp/b3")
    resp = api.post(
        "/api/books/b3/memory/facts", data='{"category": "world_rules",\n  oops}', content_type="application/json"
    )
    assert resp.status_code == 400
    assert resp.json() == {
        "message": "请求体不是合法的 JSON：第 2 行第 3 列（Expecting property name enclosed in double quotes）",
        "extra": {"line": 2, "column": 3},
    }
    resp = api.post("/api/books/b3/memory/facts", data=b'{"a": "\xff"}', content_type="application/json")
    assert resp.status_code == 400
    assert resp.json()["extra"] == {"byte": 7}
