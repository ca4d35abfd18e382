"""Issue 25: the dashboard's draft check is counted against WEBNOVEL_CONTINUITY_RATE like REST's and MCP's,
one budget per user across the dashboard and REST's session door; over it, a Chinese message on the page,
429 with Retry-After, and no check run."""

import re
from html import unescape

import pytest
from django.test import Client, override_settings

from core.auth import user_caller
from kernel.ratelimit import limiter_for
from tests.dashboard.test_continuity_page import DEAD_SPEAKS, URL, demo  # noqa: F401 (fixture)
from tests.factories import user_make

pytestmark = pytest.mark.django_db

RATE = "2/60"


def _signed_in(name):
    user = user_make(name)
    limiter_for(RATE).clear(f"WEBNOVEL_CONTINUITY_RATE:{user_caller(user)}")  # pks repeat across tests
    client = Client()
    client.force_login(user)
    return client


@override_settings(WEBNOVEL_CONTINUITY_RATE=RATE)
def test_the_draft_check_is_rate_limited_per_user_across_the_dashboard_and_rest(demo):  # noqa: F811
    client = _signed_in("curator")
    assert client.post(URL, {"text": DEAD_SPEAKS}).status_code == 200
    rest = client.post("/api/books/demo-book/continuity", {"text": DEAD_SPEAKS}, content_type="application/json")
    assert rest.status_code == 200  # the second of the user's one budget
    refused = client.post(URL, {"text": DEAD_SPEAKS})
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", refused.content.decode())))
    assert re.search(r"机检过于频繁：每 60 秒最多 2 次，请 \d+ 秒后重试", text)
    assert 'id="draft-findings"' not in refused.content.decode()  # no check ran
    assert DEAD_SPEAKS.splitlines()[-1] in text  # the form keeps the draft
    also = client.post("/api/books/demo-book/continuity", {"text": DEAD_SPEAKS}, content_type="application/json")
    assert also.status_code == 429
    other = _signed_in("editor")
    assert other.post(URL, {"text": DEAD_SPEAKS}).status_code == 200  # another user has its own budget
    assert client.get(URL).status_code == 200  # the page itself (and its re-check) is not refused
