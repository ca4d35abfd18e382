"""The first run as a newcomer meets it: the addresses ``make run`` prints, the key a second run
rotates, and the 401 of a revoked key."""

import json
import shutil
import subprocess
from io import StringIO

import pytest
from django.core.management import call_command

from core.models import ApiKey, Book
from core.services import apikey_create
from tests.conftest import REPO


def demo_setup(*args) -> str:
    out = StringIO()
    call_command("demo_setup", *args, stdout=out)
    return out.getvalue()


@pytest.fixture(autouse=True)
def no_admin_env(monkeypatch):
    monkeypatch.delenv("WEBNOVEL_ADMIN_USER", raising=False)
    monkeypatch.delenv("WEBNOVEL_ADMIN_PASSWORD", raising=False)


@pytest.mark.django_db
def test_printed_addresses_use_the_served_host_and_port():
    result = json.loads(demo_setup("--json", "--no-key", "--host", "192.168.1.20", "--port", "9001"))
    assert result["urls"] == {
        "admin": "http://192.168.1.20:9001/admin/",
        "api_docs": "http://192.168.1.20:9001/api/docs",
        "dashboard": "http://192.168.1.20:9001/dashboard/",
    }


@pytest.mark.django_db
def test_a_wildcard_host_is_printed_as_loopback():
    lines = demo_setup("--no-key", "--host", "0.0.0.0", "--port", "8080").strip().split("\n")
    assert lines[-3:] == [
        "管理后台  http://127.0.0.1:8080/admin/",
        "API 文档  http://127.0.0.1:8080/api/docs",
        "仪表盘    http://127.0.0.1:8080/dashboard/",
    ]


@pytest.mark.django_db
def test_a_second_run_says_it_revoked_the_key_it_printed_first():
    first = json.loads(demo_setup("--json"))
    assert first["api_key"]["revoked"] == []
    text = demo_setup()
    prefix = first["api_key"]["prefix"]
    assert f"注意：上次打印的演示密钥 {prefix}… 已吊销，请改用上面的新密钥（--no-key 可保留旧密钥）" in text
    assert ApiKey.objects.get(prefix=prefix).revoked is True


@pytest.mark.django_db
def test_no_key_keeps_the_printed_key_live():
    first = json.loads(demo_setup("--json"))
    text = demo_setup("--no-key")
    assert "已吊销" not in text
    assert ApiKey.objects.get(prefix=first["api_key"]["prefix"]).revoked is False


@pytest.mark.django_db
def test_a_revoked_key_gets_a_401_that_says_so(client):
    key, raw = apikey_create(name="agent", scope="read")
    key.revoked = True
    key.save()
    response = client.get("/api/books/", HTTP_X_API_KEY=raw)
    assert response.status_code == 401
    body = response.json()
    assert body["message"].startswith(f"需要认证：API 密钥 {key.prefix}… 已被吊销")
    assert body["extra"] == {"key": key.prefix, "revoked": True}
    # an unknown key keeps the plain 401
    unknown = client.get("/api/books/", HTTP_X_API_KEY="wn_not-a-key")
    assert (unknown.status_code, unknown.json()["message"]) == (401, "需要认证：请提供 X-API-Key 或登录后台")


def _examples_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "examples"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.django_db
def test_the_demo_runs_on_a_copy_and_leaves_the_example_as_git_has_it(tmp_path, monkeypatch, capsys):
    from webnovel.management.commands import demo_setup as command

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("不在 git 检出里：没有 git status 可比")
    before = _examples_status()
    copy = tmp_path / "var" / "demo-book"
    monkeypatch.setattr(command, "DEMO_SOURCE", REPO / "examples" / "demo-book")
    monkeypatch.setattr(command, "DEMO_BOOK", copy)
    result = json.loads(demo_setup("--json", "--no-key"))
    assert result["counts"]["entities"] == 23 == Book.objects.get(slug="demo-book").entities.count()  # 周虎: a tag
    assert Book.objects.get(slug="demo-book").root == str(copy)
    call_command("story_system", "玄幻退婚流", "--book", "demo-book", "--persist")
    capsys.readouterr()
    assert (copy / ".journal").is_dir() and (copy / ".story-system").is_dir()
    assert _examples_status() == before
    # a second run keeps what the demo wrote into its copy; --reset starts afresh
    (copy / "定稿" / "stray.md").write_text("不是示例的文件", encoding="utf-8")
    demo_setup("--no-key")
    assert (copy / ".story-system").is_dir() and not (copy / "定稿" / "stray.md").exists()
    demo_setup("--no-key", "--reset")
    assert not (copy / ".story-system").exists()
    assert _examples_status() == before
