"""migrate_state's input boundary (issue 19 item 8): a hostile state.json is a clear error naming the
line or the JSON path, never a traceback; nothing is migrated."""

import os

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.models import Book

pytestmark = pytest.mark.django_db


def _state(tmp_path, content: bytes | None = None):
    folder = tmp_path / ".webnovel"
    folder.mkdir()
    if content is not None:
        (folder / "state.json").write_bytes(content)
    return folder / "state.json"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"version": NaN}', "不支持 NaN（不是有效的 JSON 数值）"),
        (b'{"progress": {"current_chapter": Infinity}}', "不支持 Infinity"),
        (b'{"x": 1e999}', "数值 1e999 超出范围"),
        (b'{"progress": {"current_chapter": ' + b"9" * 5000 + b"}}", "超出 64 位范围"),
        (b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", "嵌套"),
        (b'{"entities_v3": {"\\u89d2\\u8272": {"x": {"name": "a\\u0000b"}}}}', "含 NUL 字符"),
        (b'{"entities_v3": {"x": "\\ud800"}}', "$.entities_v3.x 含无效的 Unicode 代理字符"),
        ('{"x": "林"}'.encode()[:-3] + b'\xff"}', "第 1 行不是 UTF-8 编码"),
    ],
)
def test_hostile_state_json_is_a_clear_error(tmp_path, content, message):
    _state(tmp_path, content)
    with pytest.raises(CommandError) as exc:
        call_command("migrate_state", str(tmp_path), stdout=open(os.devnull, "w"))
    assert message in str(exc.value)
    assert not Book.objects.exists()


def test_a_fifo_state_json_is_refused_without_blocking(tmp_path):
    path = _state(tmp_path)
    os.mkfifo(path)
    with pytest.raises(CommandError, match="不是普通文件"):
        call_command("migrate_state", str(tmp_path), stdout=open(os.devnull, "w"))
