"""The API door (issue 19, items 4 and 12): a book-scoped key stays in its book under a URL prefix
(``SCRIPT_NAME`` from the WSGI server, or ``FORCE_SCRIPT_NAME``), through every operation that takes a
book; a session user needs model permissions, like a key needs its scope, on the API and the dashboard."""

import json
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings

from core.services import apikey_create
from memory.models import Fact

FACT = {"category": "world_rules", "subject": "灵气", "field": "浓度", "value": "稀薄", "chapter": 1}


def _book_operations() -> list[tuple[str, str]]:
    from webnovel.api import api

    spec = api.get_openapi_schema()
    return sorted(
        (method.upper(), path)
        for path, operations in spec["paths"].items()
        for method in operations
        if "{book}" in path
    )


def _url(path: str, book: str) -> str:
    # Other path parameters get a plausible value: the scope check must refuse before they matter.
    return re.sub(r"\{(\w+)\}", lambda m: book if m.group(1) == "book" else "1", path)


def _call(client: Client, method: str, url: str, **extra):
    if method == "GET":
        return client.get(url, **extra)
    return client.post(url, data="{}", content_type="application/json", **extra)


def test_every_book_operation_is_covered():
    operations = _book_operations()
    assert len(operations) >= 75
    assert {m for m, _ in operations} == {"GET", "POST"}
    routers = {"/chapters/", "/threads", "/entities", "/story-system/", "/memory/"}
    assert all(any(r in p for _, p in operations) for r in routers)


@pytest.mark.parametrize(
    "prefix",
    [
        pytest.param({"SCRIPT_NAME": "/novel"}, id="SCRIPT_NAME"),
        pytest.param({"SCRIPT_NAME": "/a/b/c"}, id="SCRIPT_NAME-deep"),
        pytest.param(None, id="FORCE_SCRIPT_NAME"),
        pytest.param({}, id="root"),
    ],
)
def test_book_scoped_key_stays_in_its_book_under_a_prefix(books, prefix):
    demo, _ = books
    _, raw = apikey_create(name="demo only", scope="write", book=demo)
    client = Client(HTTP_X_API_KEY=raw)
    extra = prefix or {}
    with override_settings(FORCE_SCRIPT_NAME="/novel" if prefix is None else None):
        refused = []
        for method, path in _book_operations():
            response = _call(client, method, _url(path, "other"), **extra)
            body = response.json()
            if response.status_code != 403 or body["message"] != "该 API 密钥不能访问书籍 'other'":
                refused.append((method, path, response.status_code, body.get("message")))
        assert refused == []
        # its own book, read and write, under the same prefix
        assert client.get("/api/books/demo-book/chapters/1", **extra).status_code == 200
        answer = client.post(
            "/api/books/demo-book/memory/facts", data=json.dumps(FACT), content_type="application/json", **extra
        )
        assert answer.status_code == 201, answer.content
        assert [b["slug"] for b in client.get("/api/books/", **extra).json()] == ["demo-book"]
    assert Fact.objects.filter(book__slug="other").count() == 0


def test_request_path_under_a_prefix_is_not_what_the_scope_reads(books):
    # the bug: /novel/api/books/other/… never matched ^/api/books/…, so a scoped key opened every book
    demo, other = books
    _, raw = apikey_create(name="demo only", scope="write", book=demo)
    client = Client(HTTP_X_API_KEY=raw)
    response = client.post(
        "/api/books/other/memory/facts", data=json.dumps(FACT), content_type="application/json", SCRIPT_NAME="/novel"
    )
    assert response.status_code == 403
    assert response.json() == {
        "message": "该 API 密钥不能访问书籍 'other'",
        "extra": {"key": raw[:10], "book": "other"},
    }
    assert not Fact.objects.filter(book=other).exists()


def test_read_key_under_a_prefix_still_cannot_write(books):
    demo, _ = books
    _, raw = apikey_create(name="reader", scope="read", book=demo)
    client = Client(HTTP_X_API_KEY=raw)
    response = client.post(
        "/api/books/demo-book/memory/facts", data=json.dumps(FACT), content_type="application/json", SCRIPT_NAME="/x"
    )
    assert response.status_code == 403
    assert "只有读权限" in response.json()["message"]


# ── sessions: model permissions, like key scopes ──


def _session(username: str, *codenames: str, staff: bool = True) -> Client:
    user = User.objects.create_user(username, password="pw-long-enough-123", is_staff=staff)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def _post_fact(client: Client, book: str = "demo-book"):
    return client.post(f"/api/books/{book}/memory/facts", data=json.dumps(FACT), content_type="application/json")


def test_staff_without_permissions_reads_and_writes_nothing(books):
    client = _session("nobody")
    response = client.get("/api/books/demo-book/chapters/1")
    assert response.status_code == 403
    assert response.json() == {
        "message": "账号 'nobody' 缺少权限：webnovel.view_book",
        "extra": {"missing_permissions": ["webnovel.view_book"]},
    }
    assert client.get("/api/books/").status_code == 403
    assert client.get("/api/books/demo-book/memory/facts").status_code == 403
    response = _post_fact(client)
    assert response.status_code == 403
    assert response.json()["extra"]["missing_permissions"] == [
        "webnovel.view_book",
        "memory.view_fact",
        "memory.add_fact",
        "memory.change_fact",
    ]
    assert not Fact.objects.filter(subject="灵气").exists()
    for url in ("/dashboard/", "/dashboard/demo-book/", "/dashboard/demo-book/threads/", "/dashboard/other/"):
        page = client.get(url)
        assert page.status_code == 403, url
        assert "缺少权限" in page.content.decode()


def test_view_permissions_read_but_do_not_write(books):
    client = _session("viewer", "view_book", "view_fact", "view_thread", "view_entity")
    assert client.get("/api/books/demo-book/chapters/1").status_code == 200
    assert client.get("/api/books/other/chapters/1").status_code == 200  # model permissions: every book
    assert client.get("/api/books/demo-book/memory/facts").status_code == 200
    assert client.get("/api/books/demo-book/threads/overdue").status_code == 200
    response = _post_fact(client)
    assert response.status_code == 403
    assert response.json()["extra"]["missing_permissions"] == ["memory.add_fact", "memory.change_fact"]
    assert client.get("/api/books/demo-book/story-system/route?genre=玄幻").status_code == 403  # no view_storysetting
    assert client.get("/dashboard/demo-book/").status_code == 200
    assert client.get("/dashboard/demo-book/threads/").status_code == 200
    assert client.get("/dashboard/demo-book/entities/").status_code == 200
    assert client.get("/dashboard/demo-book/context/").status_code == 200


def test_an_app_permission_alone_is_not_enough(books):
    # memory.view_fact without webnovel.view_book: every path is under a book the user may not see
    client = _session("half", "view_fact")
    assert client.get("/api/books/demo-book/memory/facts").json()["extra"]["missing_permissions"] == [
        "webnovel.view_book"
    ]
    dashboard = _session("threads-only", "view_book")
    assert dashboard.get("/dashboard/demo-book/").status_code == 200
    assert dashboard.get("/dashboard/demo-book/threads/").status_code == 403
    assert dashboard.get("/dashboard/demo-book/secrets/").status_code == 403


def test_write_permissions_write(books):
    client = _session("writer", "view_book", "view_fact", "add_fact", "change_fact")
    response = _post_fact(client)
    assert response.status_code == 201
    assert Fact.objects.get(book__slug="demo-book", subject="灵气").value == "稀薄"


def test_superuser_has_every_permission(books):
    admin = User.objects.create_superuser("root", password="pw-long-enough-123")
    client = Client()
    client.force_login(admin)
    assert client.get("/api/books/other/chapters/1").status_code == 200
    assert _post_fact(client).status_code == 201
    assert client.get("/dashboard/other/").status_code == 200


def test_anonymous_post_is_401_not_a_csrf_403(books):
    client = Client(enforce_csrf_checks=True)
    response = _post_fact(client)
    assert response.status_code == 401
    assert response.json()["message"].startswith("需要认证")


def test_session_write_without_csrf_token_is_a_chinese_403(books):
    user = User.objects.create_superuser("root2", password="pw-long-enough-123")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = _post_fact(client)
    assert response.status_code == 403
    assert response.json()["message"].startswith("CSRF 校验失败")
    assert not Fact.objects.filter(subject="灵气").exists()


def test_admin_add_form_shows_the_new_key_once_and_never_puts_it_in_a_cookie(books):
    import hashlib

    from core.models import ApiKey

    admin = User.objects.create_superuser("keeper", password="pw-long-enough-123")
    client = Client()
    client.force_login(admin)
    response = client.post("/admin/webnovel/apikey/add/", {"name": "agent", "scope": "write", "book": ""})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    raw = re.search(r"wn_[A-Za-z0-9_-]{40,}", page).group()
    key = ApiKey.objects.get(name="agent")
    assert key.key_hash == hashlib.sha256(raw.encode()).hexdigest() and key.prefix == raw[:10]
    cookies = " ".join(morsel.value for morsel in response.cookies.values())
    assert raw not in cookies and raw[10:] not in cookies
    # the next page does not show it again
    assert raw not in client.get("/admin/webnovel/apikey/").content.decode()
    assert Client(HTTP_X_API_KEY=raw).get("/api/books/").status_code == 200


@override_settings(WEBNOVEL_REGEX_RATE="3/60")
def test_regex_search_is_rate_limited_per_caller(books):
    _, first = apikey_create(name="a", scope="read", book=None)
    _, second = apikey_create(name="b", scope="read", book=None)
    url = "/api/books/demo-book/search/regex?pattern=林."
    client = Client(HTTP_X_API_KEY=first)
    assert [client.get(url).status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get(url)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["message"].startswith("正则搜索过于频繁：每 60 秒最多 3 次，请 ")
    assert refused.json()["extra"]["limit"] == 3
    assert client.get("/api/books/demo-book/search?q=林风").status_code == 200  # keyword search is not limited
    assert Client(HTTP_X_API_KEY=second).get(url).status_code == 200  # another caller has its own budget


@override_settings(WEBNOVEL_LOGIN_FAILURE_RATE="3/900")
def test_admin_login_is_throttled_after_failures(books):
    User.objects.create_superuser("guarded", password="pw-long-enough-123")
    client = Client(REMOTE_ADDR="198.51.100.7")
    for _ in range(3):
        page = client.post("/admin/login/", {"username": "guarded", "password": "wrong"})
        assert page.status_code == 200 and "登录失败次数过多" not in page.content.decode()
    page = client.post("/admin/login/", {"username": "guarded", "password": "pw-long-enough-123"})
    assert page.status_code == 200  # the form again, not the redirect of a successful login
    assert "登录失败次数过多（15 分钟内 3 次）：请 15 分钟后再试" in page.content.decode()
    assert "_auth_user_id" not in client.session
    # the same user name from another address is refused too (the guess is per account)
    elsewhere = Client(REMOTE_ADDR="203.0.113.9")
    page = elsewhere.post("/admin/login/", {"username": "guarded", "password": "pw-long-enough-123"})
    assert "登录失败次数过多" in page.content.decode()
