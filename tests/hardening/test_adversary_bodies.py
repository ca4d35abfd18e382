"""Every hostile request of ``bench/adversary_bodies.py`` (issue 19, item 8 request side, and the
door's order: authentication before the body is read) gets its documented status with a Chinese
message in valid JSON, and changes nothing in the database — except the control cases meant to write."""

import json

import pytest
from django.test import Client

from bench.adversary_bodies import REQUEST_CASES, cases_replay
from core.models import Book
from core.services import apikey_create

# the replay of every hostile request of bench/adversary_bodies.py: `-m "not slow"` skips it locally
pytestmark = pytest.mark.slow


@pytest.fixture
def replayed(books):
    keys = {
        "write": apikey_create(name="w", scope="write", book=None)[1],
        "read": apikey_create(name="r", scope="read", book=None)[1],
        "scoped": apikey_create(name="s", scope="write", book=Book.objects.get(slug="demo-book"))[1],
    }
    return cases_replay(Client(), keys=keys, book="demo-book", other="other")


def test_every_hostile_request_is_refused_clearly_and_changes_nothing(replayed):
    assert len(replayed) == len(REQUEST_CASES) >= 40
    # the documented status, the expected words of the Chinese message, a valid JSON answer
    assert [(r["name"], r["status"], r["expect"], r["message"]) for r in replayed if not r["ok"]] == []
    assert [r["name"] for r in replayed if not r["unchanged"]] == [r["name"] for r in replayed if r["writes"]]
    assert [r["name"] for r in replayed if r["writes"]] == ["good fact (control)", "surrogate pair is fine"]
    assert sorted({r["status"] for r in replayed}) == [201, 400, 401, 403, 422]
    by_name = {r["name"]: r for r in replayed}
    assert (
        by_name["NaN deep in evidence"]["message"]
        == "请求体不是合法的 JSON：NaN 不是 JSON 数值（位置 body.evidence[0].x[1]）"
    )
    assert by_name["'[' x 1000"]["message"] == "请求体嵌套过深：超过 64 层（第 1 行第 65 列）"
    assert (
        by_name["extraction '[' x 1000"]["message"] == "抽取 JSON 无效：请求体嵌套过深：超过 64 层（第 1 行第 65 列）"
    )


def test_answers_are_valid_json_even_when_a_value_is_nan_or_a_lone_surrogate():
    # a NaN reaches an answer from a book file (".nan" in YAML) or an echoed float parameter; Python's
    # json would write the bare word NaN, which no other JSON parser reads
    from webnovel.api import api

    rendered = api.renderer.render(
        None, {"message": "值", "extra": {"x": float("nan"), "y": [float("-inf"), 1.5]}}, response_status=422
    )
    assert json.loads(rendered, parse_constant=lambda c: pytest.fail(c)) == {
        "message": "值",
        "extra": {"x": None, "y": [None, 1.5]},
    }
    rendered = api.renderer.render(None, {"message": "坏\ud800"}, response_status=422)
    assert rendered == b'{"message": "\\u574f\\ud800"}'
    assert api.renderer.render(None, {"message": "林风"}, response_status=200) == '{"message": "林风"}'.encode()
