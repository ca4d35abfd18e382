"""Headless Chromium (Debian's ``chromium``) driven by Playwright against pytest-django's live server.

The browser is never downloaded (``playwright install`` needs a network): it is the system's
/usr/bin/chromium, which ``.ci/run`` installs when missing. Screenshots go to test-artifacts/.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.factories import PASSWORD

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def browser_page(live_server) -> Iterator:
    """A Playwright page on a fresh Chromium, its base URL the live server.

    Request data fixtures *before* this one: while Playwright's sync API runs, an asyncio loop is
    active in this thread, so Django refuses ORM calls (and a connection opened then would belong to
    Playwright's context and outlive the test, blocking PostgreSQL's test-database teardown)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} 不存在：安装 Debian 的 chromium 包（.ci/run 会自动安装）后运行浏览器测试")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright 未安装（见 requirements.txt）")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900}, locale="zh-CN")
        page = context.new_page()
        page.set_default_timeout(15_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()


def shot(page, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot as test-artifacts/<name>.png."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def login(page, *, username: str = "curator", next_path: str = "/dashboard/") -> None:
    """Log in through the admin login form the dashboard redirects to."""
    page.goto(next_path)
    assert "/admin/login/" in page.url
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{next_path}")
