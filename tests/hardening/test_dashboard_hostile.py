"""The dashboard pages under hostile query strings and path segments: a clear 4xx, never a 500."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

from bookfiles.rebuilder import book_rebuild
from tests.conftest import DEMO_BOOK

# each page with the query parameters it reads
PAGES = {
    "/dashboard/demo-book/": ["x"],
    "/dashboard/demo-book/threads/": ["status"],
    "/dashboard/demo-book/threads/伏笔-001/": ["x"],
    "/dashboard/demo-book/entities/": ["type", "q"],
    "/dashboard/demo-book/entities/linfeng/": ["as_of"],
    "/dashboard/demo-book/secrets/": ["leaks"],
    "/dashboard/demo-book/context/": ["chapter", "budget", "task"],
    "/dashboard/demo-book/style/": ["window"],
}
VALUES = ["-1", str(2**63), str(10**30), "abc", "../../etc/passwd", "\x00", "林" * 3000]
SEGMENTS = ["..", "%2e%2e", "x" * 3000, "伏笔-999", "%00", "<script>"]


@pytest.fixture
def browser(db):
    if not DEMO_BOOK.is_dir():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    assert book_rebuild(root=DEMO_BOOK)["ok"] is True
    client = Client(raise_request_exception=True)
    # a superuser: every page must render past the permission check (tests/hardening/test_api_door.py)
    client.force_login(User.objects.create_superuser("author", password="pw-long-enough-123"))
    return client


def test_pages_answer_hostile_query_values_without_a_500(browser):
    statuses = {}
    for page, params in PAGES.items():
        for param in params:
            for value in VALUES:
                status = browser.get(page, {param: value}).status_code
                assert status < 500, (page, param, value)
                statuses[status] = statuses.get(status, 0) + 1
    assert statuses.get(200, 0) > 0 and set(statuses) <= {200, 400, 404, 422}


def test_pages_answer_hostile_path_segments_without_a_500(browser):
    for segment in SEGMENTS:
        for template in ("/dashboard/{s}/", "/dashboard/demo-book/threads/{s}/", "/dashboard/demo-book/entities/{s}/"):
            response = browser.get(template.format(s=segment))
            assert response.status_code in (400, 404, 422), (template, segment, response.status_code)
