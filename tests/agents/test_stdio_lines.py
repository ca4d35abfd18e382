"""The stdio door answers every line (issue 25 S1): the real ``manage.py mcp`` as a subprocess, fed raw
lines — a malformed one, a request with a 5,000-digit integer, one with a lone surrogate — answers each
with a JSON-RPC error carrying the request's id, and goes on serving."""

import json
import select
import subprocess
import sys
from pathlib import Path

import pytest

from agents.stdio import line_read
from tests.agents.conftest import server_env
from tests.conftest import REPO

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 120  # seconds for one answer: a liveness bound on a shared machine, not a speed figure


def _request(ident: int, method: str, params: dict | None = None) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "method": method, **({"params": params} if params else {})}


def _tool(ident: int, name: str, arguments: str) -> bytes:
    return (
        f'{{"jsonrpc": "2.0", "id": {ident}, "method": "tools/call", '
        f'"params": {{"name": "{name}", "arguments": {arguments}}}}}'
    ).encode()


class Wire:
    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict:
        ready, _, _ = select.select([self.process.stdout], [], [], WAIT)
        assert ready, "no answer from the stdio server"
        return json.loads(self.process.stdout.readline())


@pytest.fixture
def wire(demo):
    process = subprocess.Popen(
        [sys.executable, str(Path(REPO) / "manage.py"), "mcp", "--book", "demo-book"],
        cwd=str(REPO),
        env=server_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    wire = Wire(process)
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    wire.send(json.dumps(_request(1, "initialize", init)).encode())
    assert wire.answer()["id"] == 1
    wire.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    yield wire
    process.stdin.close()
    process.wait(timeout=WAIT)


def test_every_bad_line_gets_an_answer_and_the_server_goes_on(wire):
    wire.send(b"not json")
    assert wire.answer()["error"]["code"] == -32700
    wire.send(_tool(2, "entity", '{"ref": "' + "9" * 5000 + '"}').replace(b'"' + b"9" * 5000 + b'"', b"9" * 5000))
    answer = wire.answer()
    assert (answer["id"], answer["error"]["code"]) == (2, -32602)
    assert "整数超出范围" in answer["error"]["message"] and "5000 位" in answer["error"]["message"]
    wire.send(_tool(3, "entity", '{"ref": "\\ud800"}'))
    answer = wire.answer()
    assert (answer["id"], answer["error"]["code"]) == (3, -32602)
    assert answer["error"]["data"] == {"path": "message.params.arguments.ref"}
    wire.send(b"\xff\xfe{")
    assert wire.answer() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32700,
            "message": "解析错误（Parse error）：请求体不是 UTF-8 文本：第 0 个字节无法解码",
            "data": {"byte": 0},
        },
    }
    wire.send(b'{"jsonrpc": "2.0", "id": 4}')  # no method
    answer = wire.answer()
    assert (answer["id"], answer["error"]["code"]) == (4, -32600)
    # a line over the HTTP door's body cap (10 MB): answered without being held whole
    wire.send(_tool(6, "entity", '{"ref": "' + "剑" * (4 << 20) + '"}'))
    answer = wire.answer()
    assert (answer["id"], answer["error"]["code"]) == (None, -32600)
    assert answer["error"]["data"] == {"max_bytes": 10 * 1024 * 1024}
    # still serving: a good request after the bad ones
    wire.send(_tool(5, "entity", '{"ref": "林风"}'))
    answer = wire.answer()
    assert answer["id"] == 5 and not answer["result"].get("isError")
    assert json.loads(answer["result"]["content"][0]["text"])["id"] == "linfeng"


@pytest.mark.parametrize(
    ("line", "ident", "code"),
    [
        (b"{", None, -32700),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": NaN}}', None, -32700),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": 1e400}}', 7, -32602),
        (b'{"jsonrpc": "2.0", "id": "a\\u0000", "method": "ping"}', None, -32602),
        (b'{"jsonrpc": "2.0", "id": 99999999999999999999999, "method": "ping"}', None, -32602),
        (b"[" * 100 + b"]" * 100, None, -32602),
        (b"[1, 2]", None, -32600),
        (b'{"jsonrpc": "1.0", "id": "x", "method": "ping"}', "x", -32600),
    ],
)
def test_a_bad_line_is_answered_with_its_code_and_id(line, ident, code):
    error = line_read(line)
    assert (error.id, error.error.code) == (ident, code)


def test_a_bad_notification_and_a_blank_line_are_not_answered():
    assert line_read(b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\\ud800"}}') is None
    assert line_read(b'{"jsonrpc": "2.0", "method": 5}') is not None  # not a notification: no method name
    assert line_read(b"  \n") is None
