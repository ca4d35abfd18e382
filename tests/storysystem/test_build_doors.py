"""Building a setting through REST and the MCP write tool: one service (``story_setting_build``), the same
answers and the same 422."""

import json

import pytest

from agents.writes import write_tools

pytestmark = pytest.mark.django_db


def _both(api, book, body):
    rest = api.post("/api/books/tuihun/story-system/build", json.dumps(body), content_type="application/json")
    try:
        tool = write_tools()["story-system-build"].run(book, body)
    except Exception as exc:  # a domain error: what the MCP dispatcher turns into a tool error
        tool = {"status": exc.status_code, "message": exc.message}
    return rest, tool


def _stamp_dropped(answer: dict) -> tuple[dict, str]:
    """The answer without its build time (the two builds may fall in different seconds), and that time."""
    answer = json.loads(json.dumps(answer))
    return answer, answer["story_system"]["meta"].pop("generated_at")


def test_a_master_build_answers_alike(api, book):
    rest, tool = _both(api, book, {"query": "玄幻退婚流"})
    assert rest.status_code == 200
    (tool_answer, tool_at), (rest_answer, rest_at) = _stamp_dropped(tool), _stamp_dropped(rest.json())
    assert tool_answer == rest_answer
    assert tool_at >= rest_at  # ISO 8601 in one time zone: the later build, the later stamp
    assert (tool["persisted"], tool["files"]) == (
        True,
        [".story-system/MASTER_SETTING.json", ".story-system/MASTER_SETTING.md"],
    )


def test_removing_an_anti_pattern_from_the_master_is_the_same_422(api, book):
    rest, tool = _both(api, book, {"query": "玄幻退婚流", "remove_anti_patterns": ["降智反派"], "persist": False})
    assert rest.status_code == 422
    assert tool == {"status": 422, "message": rest.json()["message"]}
    assert tool["message"] == "remove_anti_patterns 只适用于章节（且总被拒绝）；总设定请直接重建"
