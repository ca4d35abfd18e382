"""The MCP server: every read of the registry as a tool (``agents.reads``), the curated writes
(``agents.writes``), one dispatcher, errors as tool errors with REST's message and details.

Built on the SDK's low-level ``Server`` rather than its decorator layer: the tools are generated from
declarations that already carry their JSON Schema, so there is no Python signature to infer one from.
The same server object serves stdio (one book, a local author: reads and writes) and streamable HTTP
(the book and the key's scope come with each request, see ``agents.http``)."""

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import DataError, OperationalError, close_old_connections
from mcp.server import Server

from agents.reads import interface_call, interface_structured, interface_tool
from agents.writes import WriteTool, write_tools
from core.auth import rate_count
from core.models import Book
from kernel.exceptions import (
    DATABASE_BUSY_MESSAGE,
    DATABASE_BUSY_RETRY_AFTER,
    DomainError,
    NotFound,
    PermissionDenied,
    database_busy,
)
from kernel.interfaces import Interface, interfaces_load

logger = logging.getLogger(__name__)

SERVER_NAME = "webnovel"
ACCESS_STATE_KEY = "webnovel_access"  # where agents.http puts a request's Access in the ASGI scope state
INSTRUCTIONS = (
    "长篇网文的连续性数据库（一本书）。写第 N 章前调用 context 取上下文包；写完并保存章节文件后调用 "
    "chapter-finalize，再按 extraction-ingest 的输入 Schema 从正文填写抽取结果并提交；entity-pending 列出待确认项，"
    "pending-confirm / pending-reject 处理。查询类工具只读，答案与 REST API 相同；错误返回中文说明与 JSON 细节。"
)


@dataclass(frozen=True)
class Access:
    """What one caller may do: which book (a resolver run in the database thread) and whether it may write."""

    book: Callable[[], Book]
    write: bool
    # Who is calling, for the rate limits of costly reads (``Interface.rate``), shared with REST (an API
    # key's ``core.auth.key_caller``); None for the local author on stdio, who is not limited (nor on the CLI).
    caller: str | None = None
    # Why a write is refused to this caller, in the words of its door (a read key over HTTP, --read-only on stdio).
    refusal: str = "该 API 密钥只有读权限，写操作需要 write 密钥"


@cache
def _registry() -> dict[str, Interface]:
    # The registry dict itself (later registrations land in it): ``interfaces_load`` tries to import every
    # app's ``interfaces`` module, and each app without one costs a failed import (file-system lookups) per call.
    return interfaces_load()


@cache
def _curated() -> dict[str, WriteTool]:
    # Built once per process: building them renders the input schemas of their pydantic models, which
    # cost ~5 ms — more than a P0 read itself — when it was done again at every call.
    return write_tools()


@cache
def _tools() -> tuple[dict[str, types.Tool], dict[str, types.Tool]]:
    reads = {name: types.Tool.model_validate(interface_tool(spec)) for name, spec in sorted(_registry().items())}
    writes = {name: types.Tool.model_validate(tool.tool()) for name, tool in _curated().items()}
    clash = set(reads) & set(writes)
    if clash:
        raise RuntimeError(f"MCP tool names used by a read and a write: {sorted(clash)}")
    return reads, writes


def tool_input_schema(name: str) -> dict[str, Any] | None:
    """The input schema of tool ``name`` (None for no such tool): whatever the caller may call, a tool has one schema."""
    reads, writes = _tools()
    tool = reads.get(name) or writes.get(name)
    return tool.input_schema if tool is not None else None


def _allowed(access: Access, tool: WriteTool) -> bool:
    """A curated tool is for write access, unless it declares ``readOnlyHint`` (it writes nothing)."""
    return access.write or bool(tool.annotations.get("readOnlyHint"))


def tools_for(access: Access | None) -> list[types.Tool]:
    """The tools a caller sees: every read, and the curated tools its access allows."""
    if access is None:
        return []
    reads, writes = _tools()
    curated = _curated()
    return [*reads.values(), *(tool for name, tool in writes.items() if _allowed(access, curated[name]))]


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_text(data: Any) -> str:
    """JSON as the REST API writes it: UTF-8 text, NaN / Infinity as null, dates as strings."""
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, default=str)
    except ValueError:
        return json.dumps(_finite(json.loads(json.dumps(data, default=str))), ensure_ascii=False, allow_nan=False)


def tool_error(status: int, message: str, extra: Any = None) -> types.CallToolResult:
    """A tool error: REST's error body (``message``, ``extra``) with its HTTP status."""
    body = {"status": status, "message": message, "extra": extra if extra is not None else {}}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json_text(body))], structured_content=body, is_error=True
    )


def tool_answer(data: Any, spec: Interface | None = None) -> types.CallToolResult:
    """The answer as text (REST's body); a read with an output schema also carries it as structured content."""
    text = data if isinstance(data, str) else json_text(data)
    structured = interface_structured(spec, data if isinstance(data, str) else json.loads(text)) if spec else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


def tool_call(access: Access | None, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Run one tool call in the database thread. Never raises: every failure is a tool error."""
    close_old_connections()  # as Django does around each request (CONN_MAX_AGE, dropped connections)
    try:
        return tool_answer(*_dispatch(access, name, arguments))
    except DomainError as exc:
        return tool_error(exc.status_code, exc.message, exc.extra)
    except (OverflowError, DataError):
        return tool_error(422, "参数数值超出范围（整数最大 9223372036854775807）")
    except OperationalError as exc:
        if database_busy(exc):
            return tool_error(503, DATABASE_BUSY_MESSAGE, {"retry_after": DATABASE_BUSY_RETRY_AFTER})
        logger.exception("MCP tool %s failed", name)
        return tool_error(500, "服务器内部错误：数据库操作失败，未写入任何内容", {"tool": name})
    except Exception:
        logger.exception("MCP tool %s failed", name)
        return tool_error(500, "服务器内部错误（已记录日志），未写入任何内容", {"tool": name})
    finally:
        close_old_connections()


def _dispatch(access: Access | None, name: str, arguments: dict[str, Any] | None) -> tuple[Any, Interface | None]:
    """The answer of one call, and the read that gave it (None for a curated tool)."""
    if access is None:
        raise PermissionDenied("需要认证：请提供 X-API-Key 或 Authorization: Bearer 密钥")
    registry = _registry()
    if name in registry:
        spec = registry[name]
        if spec.rate and access.caller is not None:
            rate_count(caller=access.caller, setting=spec.rate[0], what=spec.rate[1])
        return interface_call(spec, book=access.book(), arguments=arguments), spec
    writes = _curated()
    if name in writes:
        if not _allowed(access, writes[name]):
            raise PermissionDenied(access.refusal, extra={"tool": name})
        if writes[name].rate and access.caller is not None:
            rate_count(caller=access.caller, setting=writes[name].rate[0], what=writes[name].rate[1])
        return writes[name].run(access.book(), dict(arguments or {})), None
    raise NotFound(f"没有这个工具：{name}", extra={"tool": name})


def server_build(*, default_access: Access | None = None) -> Server:
    """The MCP server. ``default_access`` serves a call that carries none (stdio); an HTTP request
    carries its own (``agents.http`` checks the key first), and one without any sees nothing."""

    def access_of(ctx: Any) -> Access | None:
        request = getattr(ctx, "request", None)
        if request is None:
            return default_access
        return request.scope.get("state", {}).get(ACCESS_STATE_KEY)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools_for(access_of(ctx)))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # Django's ORM is synchronous: calls run in the one thread Django's own async views use.
        run = sync_to_async(tool_call, thread_sensitive=True)
        return await run(access_of(ctx), params.name, params.arguments)

    return Server(
        SERVER_NAME,
        version="1.0",
        title="webnovel",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        # Over HTTP the SDK checks a call's Mcp-Param-* headers against the tool's input schema; without
        # this lookup it runs the whole tools/list handler (every tool serialized) at every call.
        get_tool_input_schema=tool_input_schema,
    )
