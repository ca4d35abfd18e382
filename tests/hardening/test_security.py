"""Who may read and change what: hashed, scoped (read / write, per book), revocable API keys; CSRF
on session writes; admin permissions; production settings pass ``check --deploy``; no secret in
the repository."""

import hashlib
import os
import re
import secrets
import subprocess
import sys

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from core.models import ApiKey
from core.services import apikey_create, apikey_revoke
from tests.conftest import REPO

EXTRACTION = '{"scenes": [{"index": 1, "location": "山门", "summary": "夜谈", "characters": []}]}'


def _client(raw: str, *, bearer: bool = False) -> Client:
    if bearer:
        return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return Client(HTTP_X_API_KEY=raw)


def _ingest(client: Client, book: str = "demo-book"):
    return client.post(f"/api/books/{book}/chapters/1/extraction", data=EXTRACTION, content_type="application/json")


def test_keys_are_stored_as_hashes_only(books):
    key, raw = apikey_create(name="agent", scope="read", book=None)
    stored = ApiKey.objects.filter(pk=key.pk).values().get()
    assert stored["key_hash"] == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in {str(v) for v in stored.values()}
    assert stored["prefix"] == raw[:10] and len(raw) > 40


@pytest.mark.parametrize("bearer", [False, True])
def test_read_key_reads_but_cannot_write(books, bearer):
    _, raw = apikey_create(name="reader", scope="read", book=None)
    client = _client(raw, bearer=bearer)
    assert client.get("/api/books/demo-book/chapters/1").status_code == 200
    response = _ingest(client)
    assert response.status_code == 403
    assert "只有读权限" in response.json()["message"]
    assert client.post("/api/books/demo-book/memory/refresh").status_code == 403


def test_write_key_writes(books):
    _, raw = apikey_create(name="writer", scope="write", book=None)
    response = _ingest(_client(raw))
    assert response.status_code == 200
    assert response.json()["chapter"] == 1


def test_book_scoped_key_opens_only_its_book(books):
    demo, other = books
    _, raw = apikey_create(name="demo only", scope="write", book=demo)
    client = _client(raw)
    assert client.get("/api/books/demo-book/chapters/1").status_code == 200
    assert _ingest(client).status_code == 200
    for url in ("/api/books/other/chapters/1", "/api/books/other/chapters/1/body", "/api/books/other/search?q=正文"):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "不能访问书籍 'other'" in response.json()["message"]
    assert _ingest(client, "other").status_code == 403
    listed = [b["slug"] for b in client.get("/api/books/").json()]
    assert listed == ["demo-book"]  # the other book's existence is not the key's business


def test_revoked_and_unknown_keys_are_refused(books):
    key, raw = apikey_create(name="old", scope="write", book=None)
    client = _client(raw)
    assert client.get("/api/books/").status_code == 200
    assert apikey_revoke(prefix=key.prefix) == 1
    response = client.get("/api/books/")
    assert response.status_code == 401
    assert "需要认证" in response.json()["message"]
    assert _client("wn_" + secrets.token_urlsafe(32)).get("/api/books/").status_code == 401
    assert Client().get("/api/books/").status_code == 401
    assert _client("").get("/api/books/").status_code == 401


def test_session_writes_need_the_csrf_token(books):
    user = User.objects.create_user("author", password="pw-long-enough-123")
    perms = ["view_book", "view_chapter", "view_entity", "add_entity", "change_entity"]
    user.user_permissions.add(*Permission.objects.filter(codename__in=perms))
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.get("/api/books/demo-book/chapters/1").status_code == 200
    response = _ingest(client)
    assert response.status_code == 403
    client.get("/admin/login/")  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/api/books/demo-book/chapters/1/extraction",
        data=EXTRACTION,
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 200


def test_dashboard_and_admin_need_a_login_and_the_right_permission(books):
    anonymous = Client()
    assert anonymous.get("/dashboard/").status_code == 302
    assert anonymous.get("/admin/webnovel/apikey/").status_code == 302
    staff = User.objects.create_user("editor", password="pw-long-enough-123", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/webnovel/apikey/").status_code == 403  # staff, but no permission
    staff.user_permissions.add(Permission.objects.get(codename="view_apikey"))
    assert client.get("/admin/webnovel/apikey/").status_code == 200
    plain = User.objects.create_user("reader", password="pw-long-enough-123")
    client.force_login(plain)
    assert client.get("/admin/").status_code == 302  # not staff: back to the login page


def _check_deploy(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "WEBNOVEL_PRODUCTION"}}
    env.update(env_extra)
    env["SQLITE_PATH"] = env.get("SQLITE_PATH", "/tmp/wn-check-deploy.sqlite3")
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_production_settings():
    production = {"DEBUG": "0", "WEBNOVEL_PRODUCTION": "1", "SECRET_KEY": secrets.token_urlsafe(60)}
    proc = _check_deploy(production)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "no issues" in proc.stdout
    # a production run that forgot its secret key (or gives a short one) refuses to start at all
    for key in ({}, {"SECRET_KEY": ""}, {"SECRET_KEY": "short-key"}):
        proc = _check_deploy({"DEBUG": "0", "WEBNOVEL_PRODUCTION": "1", **key})
        assert proc.returncode != 0
        assert "WEBNOVEL_PRODUCTION=1 需要在环境变量 SECRET_KEY 中设置至少 50 个字符的随机密钥" in proc.stderr
    # without production settings, the development key still serves a local run (check flags it)
    proc = _check_deploy({"DEBUG": "0"})
    assert "security.W009" in proc.stderr + proc.stdout


SECRET_PATTERNS = {
    "raw API key": re.compile(r"\bwn_[A-Za-z0-9_-]{40,}"),
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    # placeholders (PASSWORD, …, $VAR, <pw>, ***) are documentation, not secrets
    "password in a database URL": re.compile(r"postgres(?:ql)?://[^:/\s@]+:(?!PASSWORD@|…@|\$|<|\*)[^@/\s]+@"),
    "AWS key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "hard-coded SECRET_KEY": re.compile(r"SECRET_KEY\s*=\s*['\"](?!django-insecure-)[^'\"]{20,}['\"]"),
}


def test_no_secret_is_committed():
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.split(b"\0")
    found = []
    for name in filter(None, files):
        path = REPO / name.decode()
        if not path.is_file() or path.stat().st_size > 2_000_000 or path.suffix in {".png", ".jpg", ".sqlite3"}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [(str(name.decode()), what) for what, rx in SECRET_PATTERNS.items() if rx.search(text)]
    assert found == []
    tracked = {n.decode() for n in files}
    assert not [n for n in tracked if n.endswith((".sqlite3", ".env")) or n.startswith("var/")]
