"""Issue 19: ``source_chapter: -5`` and other out-of-range numbers in a scratchpad import reached the
database (a PostgreSQL ``DataError``, a 500) or were silently clamped. Each is now a clear reason
naming the item's path, through the command and REST alike; the item is not imported (it is kept
verbatim in the legacy store) and the rest of the file is — issue 12: an old plugin's file is never
refused whole for one item."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.models import Fact
from memory.services import scratchpad_import


def _item(**extra):
    return {"id": "sf-1", "subject": "林风", "field": "境界", "value": "炼气四层", **extra}


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            {"source_chapter": -5},
            "story_facts[0].source_chapter 应为 0 到 10000000 的整数章节号（0 表示设定），收到 '-5'",
        ),
        ({"source_chapter": 10_000_001}, "story_facts[0].source_chapter 应为 0 到 10000000 的整数章节号"),
        ({"source_chapter": 9223372036854775808}, "story_facts[0].source_chapter 应为 0 到 10000000"),
        ({"source_chapter": True}, "story_facts[0].source_chapter 应为 0 到 10000000"),
        ({"source_chapter": 2.5}, "story_facts[0].source_chapter 应为 0 到 10000000"),
        ({"source_chapter": "第三章"}, "story_facts[0].source_chapter 应为 0 到 10000000"),
        ({"confidence": 1.5}, "story_facts[0].confidence 应为 0 到 1 之间的数，收到 '1.5'"),
        ({"confidence": -0.1}, "story_facts[0].confidence 应为 0 到 1 之间的数"),
        ({"confidence": float("nan")}, "story_facts[0].confidence 应为 0 到 1 之间的数，收到 'nan'"),
        ({"confidence": "high"}, "story_facts[0].confidence 应为 0 到 1 之间的数"),
        ({"id": "k" * 101}, "story_facts[0].id 过长：101 个字符，上限 100"),
        ({"subject": "林" * 201}, "story_facts[0].subject 过长：201 个字符，上限 200"),
        ({"value": "炼气\x00四层"}, "story_facts[0].value 含 NUL 字符"),
    ],
)
def test_out_of_range_values_name_the_item_and_skip_only_it(book, extra, message):
    data = {"story_facts": [_item(**extra)], "world_rules": [_item(id="wr-1", subject="剑冢")]}
    result = scratchpad_import(book=book, data=data)
    assert [s["item"] for s in result["skipped"]] == ["story_facts[0]"]
    assert result["skipped"][0]["reason"].startswith(message)
    assert list(Fact.objects.filter(book=book, origin="import").values_list("key", flat=True)) == ["wr-1"]
    assert result["kept"] == ["story_facts.unmapped"]


def test_valid_edges_are_accepted(book):
    data = {
        "story_facts": [
            _item(source_chapter=None, confidence=None),
            _item(id="sf-2", source_chapter=10_000_000, confidence=0),
            _item(id="sf-3", source_chapter="12", confidence="0.5"),
        ]
    }
    result = scratchpad_import(book=book, data=data)
    assert (result["created"], result["updated"], result["skipped"]) == (3, 0, [])
    got = sorted(Fact.objects.filter(book=book, origin="import").values_list("key", "source_chapter", "confidence"))
    assert got == [("sf-1", 0, 1.0), ("sf-2", 10_000_000, 0.0), ("sf-3", 12, 0.5)]


def test_rest_import_with_a_negative_chapter_reports_the_item(book, api):
    body = {"story_facts": [_item(source_chapter=-5)]}
    answer = api.post("/api/books/mem/memory/import", json.dumps(body), content_type="application/json")
    assert answer.status_code == 200
    (skipped,) = answer.json()["skipped"]
    assert skipped["item"] == "story_facts[0]"
    assert skipped["reason"].startswith("story_facts[0].source_chapter 应为 0 到 10000000 的整数章节号")
    assert not Fact.objects.filter(book=book, origin="import").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"story_facts": [{"subject": "a", "field": "b", "value": "c", "confidence": NaN}]}', "不支持 NaN"),
        ('{"a": ' + "9" * 5000 + "}", "不是有效的 JSON"),
    ],
)
def test_command_refuses_bad_files_clearly(book, tmp_path, text, message):
    path = tmp_path / "scratchpad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CommandError, match=message):
        call_command("memory_import", "mem", str(path))
    assert not Fact.objects.filter(book=book, origin="import").exists()


def test_command_reports_an_out_of_range_item(book, tmp_path, capsys):
    path = tmp_path / "scratchpad.json"
    path.write_text('{"story_facts": [{"subject": "a", "field": "b", "value": "c", "source_chapter": -5}]}')
    call_command("memory_import", "mem", str(path))
    (skipped,) = json.loads(capsys.readouterr().out)["skipped"]
    assert skipped["reason"].startswith("story_facts[0].source_chapter 应为 0 到 10000000")
    assert not Fact.objects.filter(book=book, origin="import").exists()


def test_command_refuses_a_file_that_is_not_utf8(book, tmp_path):
    path = tmp_path / "scratchpad.json"
    path.write_bytes(b'{"a": "\xff\xfe"}')
    with pytest.raises(CommandError, match="不是 UTF-8 文本"):
        call_command("memory_import", "mem", str(path))
