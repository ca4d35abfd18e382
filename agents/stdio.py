"""The MCP server over stdio, with an answer to every line a host sends.

The SDK's own stdio transport hands a line it cannot validate to the server as an exception, which the
server only logs: a malformed line, a request carrying a 5,000-digit integer or a lone surrogate
(``"\\ud800"``) got no answer at all, and the host waited for its own timeout. Here each line is read as
bytes and parsed with the strict parser of every request body (``kernel.jsonsafe``), then validated as a
JSON-RPC message; a line that fails is answered at once with a JSON-RPC error — the id of the request
when it can be read, else null (JSON-RPC 2.0 §5.1):

- ``-32700`` (parse error): not UTF-8, not JSON, or ``NaN`` / ``Infinity`` (not JSON);
- ``-32602`` (invalid params): JSON, but a value no tool can take — an integer past 64 bits, a lone
  surrogate or NUL in a string, nesting past 64 levels (the REST door's 422);
- ``-32600`` (invalid request): JSON, but not a JSON-RPC message (no method, an array, ``"jsonrpc": "1.0"`` …),
  or a line over the HTTP door's body cap (``DATA_UPLOAD_MAX_MEMORY_SIZE``), read past without being held.

A notification (an object with a method and no id) that fails is not answered (the protocol forbids it)
and is logged on stderr. While serving, fd 0 reads the null device and fd 1 writes to stderr, as the SDK
does, so a stray print or a child process cannot corrupt the wire."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from kernel.jsonsafe import INT_MAX, INT_MIN, JsonRefused, json_loads_strict

logger = logging.getLogger(__name__)

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def line_read(raw: bytes) -> types.JSONRPCMessage | types.JSONRPCError | None:
    """One line of the wire: the JSON-RPC message it holds, the error that answers it, or None (a blank
    line, or a notification that fails: nothing to answer)."""
    text = raw.strip()
    if not text:
        return None
    try:
        value = json_loads_strict(text, root="message")
    except JsonRefused as exc:
        if exc.status_code == 400:
            return _error(None, PARSE_ERROR, f"解析错误（Parse error）：{exc.message}", exc.extra)
        has_id, ident = _id_of(text)
        if not has_id and _is_notification(text):
            logger.warning("MCP stdio: a notification refused: %s", exc.message)
            return None
        return _error(ident, INVALID_PARAMS, f"参数无效（Invalid params）：{exc.message}", exc.extra)
    try:
        return types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        ident = value.get("id") if isinstance(value, dict) else None
        if isinstance(value, dict) and "id" not in value and isinstance(value.get("method"), str):
            logger.warning("MCP stdio: an invalid notification %s", value.get("method"))
            return None
        if not isinstance(ident, int | str):
            ident = None
        where = "；".join(f"{'.'.join(str(p) for p in e['loc']) or '（顶层）'}：{e['msg']}" for e in exc.errors()[:3])
        return _error(ident, INVALID_REQUEST, f"不是合法的 JSON-RPC 请求（Invalid Request）：{where}", {})


def _error(ident: int | str | None, code: int, message: str, data: Any) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message, data=data or None)
    )


def _lenient(text: bytes) -> Any:
    """The line parsed with every refused value as None (its id is still wanted), or None."""
    try:
        return json.loads(
            text,
            parse_int=lambda s: int(s) if len(s.lstrip("-")) <= 20 else None,
            parse_constant=lambda s: None,
        )
    except (ValueError, RecursionError):
        return None


def _id_of(text: bytes) -> tuple[bool, int | str | None]:
    """Whether the line is an object with an ``id``, and that id when it can be sent back as it is."""
    value = _lenient(text)
    if not isinstance(value, dict) or "id" not in value:
        return False, None
    ident = value["id"]
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        return True, None
    if isinstance(ident, int) and not INT_MIN <= ident <= INT_MAX:
        return True, None
    if isinstance(ident, str) and any(0xD800 <= ord(c) <= 0xDFFF or c == "\0" for c in ident):
        return True, None
    return True, ident


def _is_notification(text: bytes) -> bool:
    value = _lenient(text)
    return isinstance(value, dict) and isinstance(value.get("method"), str)


@contextmanager
def _wire() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The process's stdin and stdout as private descriptors; fd 0 reads the null device and fd 1 writes
    to stderr until the server ends (then fd 1 is put back). The private stdin is never closed: a worker
    thread may still be blocked reading it."""
    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb", closefd=False)
    finally:
        sys.stdout.flush()
        os.dup2(wire_out, 1)
        os.close(wire_out)


def line_too_large(max_bytes: int) -> types.JSONRPCError:
    """The answer to a line longer than ``max_bytes`` (its id is not read: the line is not kept)."""
    return _error(
        None,
        INVALID_REQUEST,
        f"请求过大：一行超过 {max_bytes} 字节（DATA_UPLOAD_MAX_MEMORY_SIZE，与 HTTP 入口相同），未处理",
        {"max_bytes": max_bytes},
    )


async def _lines(wire_in: BinaryIO, max_bytes: int) -> AsyncIterator[bytes | None]:
    """The wire's lines; None for one longer than ``max_bytes``, read past in pieces, never held whole."""
    while True:
        line = await anyio.to_thread.run_sync(wire_in.readline, max_bytes + 1)
        if not line:
            return
        if len(line) <= max_bytes or line.endswith(b"\n"):
            yield line
            continue
        while line and not line.endswith(b"\n"):
            line = await anyio.to_thread.run_sync(wire_in.readline, 1 << 20)
        yield None


async def stdio_serve(server: Server, *, max_bytes: int) -> None:
    """Serve ``server`` over stdin / stdout until stdin ends, answering every line (module docstring);
    a line over ``max_bytes`` (the HTTP door's body cap) is answered without being read whole."""
    with _wire() as (wire_in, wire_out):
        to_server, from_wire = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_wire, from_server = anyio.create_memory_object_stream[SessionMessage](0)
        answers = to_wire.clone()

        def send(data: bytes) -> None:
            wire_out.write(data)
            wire_out.flush()

        async def reader() -> None:
            async with to_server, answers:
                async for raw in _lines(wire_in, max_bytes):
                    message = line_too_large(max_bytes) if raw is None else line_read(raw)
                    if isinstance(message, types.JSONRPCError):
                        await answers.send(SessionMessage(message))
                    elif message is not None:
                        await to_server.send(SessionMessage(message))

        async def writer() -> None:
            async with from_server:
                async for item in from_server:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    # write and flush in one trip to a worker thread (two trips cost ~0.1 ms of CPU per answer)
                    await anyio.to_thread.run_sync(send, data.encode("utf-8", "backslashreplace") + b"\n")

        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            group.start_soon(writer)
            async with to_wire:
                await server.run(from_wire, to_wire, server.create_initialization_options())
            group.cancel_scope.cancel()
