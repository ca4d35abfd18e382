"""The MCP server over streamable HTTP, mounted at ``/mcp/<book>`` of the ASGI application.

Authenticated like the REST API, with the same API keys (``X-API-Key`` or ``Authorization: Bearer``)
and scopes: a read key lists and calls the reads only, a book-scoped key opens only its book (403 for
another, before the MCP server sees the request), a revoked or unknown key is a 401: each refusal keeps
REST's status and message, written as a JSON-RPC error so that an SDK client shows the Chinese reason. ``/mcp`` without a book
serves the book of a book-scoped key. A costly read's rate limit (``Interface.rate``: regex search) counts per
key, one count with the key's REST calls, and answers with REST's 429 message as a tool error. Stateless with JSON answers: each POST carries one exchange, so
any worker can answer it and no session outlives a request."""

import json
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from agents.server import ACCESS_STATE_KEY, Access, server_build
from core.auth import apikey_touch, key_caller
from core.lazybuild import book_get_or_build
from core.models import ApiKey
from core.models.apikey import apikey_hash
from kernel.exceptions import DomainError, NotFound, PermissionDenied

MOUNT = "/mcp"
ASGIApp = Callable[[dict, Callable, Callable], Awaitable[None]]


class Unauthenticated(DomainError):
    status_code = 401


def _raw_key(headers: dict[str, str]) -> str | None:
    if headers.get("x-api-key"):
        return headers["x-api-key"].strip()
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _access_check_closing(*, raw: str | None, slug: str | None) -> Access:
    # As Django does around each request: a connection past CONN_MAX_AGE (or broken) is not reused.
    close_old_connections()
    try:
        return access_check(raw=raw, slug=slug)
    finally:
        close_old_connections()


def access_check(*, raw: str | None, slug: str | None) -> Access:
    """The caller's Access for book ``slug`` (None: the key's own book), or the REST API's 401 / 403 / 404."""
    key = (
        ApiKey.objects.select_related("book").filter(key_hash=apikey_hash(raw), revoked=False).first() if raw else None
    )
    if key is None:
        raise Unauthenticated("需要认证：请提供 X-API-Key 或 Authorization: Bearer 密钥（MCP 不接受后台登录）")
    if slug is None:
        if key.book is None:
            raise NotFound(f"请在地址中指明书籍：{MOUNT}/<书籍slug>（该密钥可访问所有书）", extra={"path": MOUNT})
        slug = key.book.slug
    if key.book_id is not None and slug != key.book.slug:
        raise PermissionDenied(f"该 API 密钥不能访问书籍 '{slug}'", extra={"key": key.prefix, "book": slug})
    # NotFound naming it, unless its folder is in WEBNOVEL_BOOKS_DIR (lazy build). The row read here serves
    # the request's call too: one POST is one exchange (stateless), so it is as fresh as a second read.
    book = book_get_or_build(slug=slug)
    apikey_touch(key)
    return Access(book=lambda: book, write=key.scope == ApiKey.Scope.WRITE, caller=key_caller(key))


# JSON-RPC's "invalid request" for a refusal of the caller, "internal error" for a server that cannot serve.
INVALID_REQUEST, INTERNAL_ERROR = -32600, -32603
ID_PEEK_BYTES = 64 * 1024  # a refusal answers the request's id when its body is small enough to read for it


async def _request_id(scope: dict, receive: Callable) -> Any:
    """The JSON-RPC id of a refused POST (None when absent, unreadable or in a large body): the body is read
    only for this, since a refused request never reaches the MCP server."""
    if scope.get("method") != "POST":
        return None
    body = b""
    while len(body) <= ID_PEEK_BYTES:
        message = await receive()
        body += message.get("body", b"")
        if message["type"] != "http.request" or not message.get("more_body"):
            break
    try:
        parsed = json.loads(body) if len(body) <= ID_PEEK_BYTES else None
    except ValueError:
        return None
    request_id = parsed.get("id") if isinstance(parsed, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


async def _refuse(
    scope: dict, receive: Callable, send: Callable, status: int, body: dict[str, Any], headers: list | None = None
) -> None:
    """A refusal before the MCP server: the HTTP status the spec asks for (401 / 403 / 404 / 400 / 503) with a
    JSON-RPC error as its body, so an SDK client shows REST's Chinese message (``data``: the status and REST's
    ``extra``) instead of a bare "error response"."""
    error = {
        "code": INTERNAL_ERROR if status >= 500 else INVALID_REQUEST,
        "message": body["message"],
        "data": {"status": status, "extra": body.get("extra") or {}},
    }
    reply = {"jsonrpc": "2.0", "id": await _request_id(scope, receive), "error": error}
    data = json.dumps(reply, ensure_ascii=False).encode("utf-8")
    head = [(b"content-type", b"application/json; charset=utf-8"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": head + (headers or [])})
    await send({"type": "http.response.body", "body": data})


def _book_of(path: str) -> tuple[bool, str | None]:
    """Whether ``path`` is under the mount, and the book slug it names (None for the bare mount)."""
    if path != MOUNT and not path.startswith(MOUNT + "/"):
        return False, None
    rest = unquote(path[len(MOUNT) :]).strip("/")
    return True, rest or None


class McpMount:
    """ASGI: ``/mcp[/<book>]`` to the MCP server behind the API-key check, everything else to ``app``
    (Django). Owns the lifespan: the SDK's session manager runs for the application's lifetime."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.manager = StreamableHTTPSessionManager(
            app=server_build(),
            json_response=True,
            stateless=True,
            max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        )
        self._running = False

    @asynccontextmanager
    async def lifespan(self):
        """Run the MCP session manager (uvicorn's lifespan, or a test's ``async with``)."""
        async with self.manager.run():
            self._running = True
            try:
                yield
            finally:
                self._running = False

    async def _lifespan_protocol(self, receive: Callable, send: Callable) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with self.lifespan():
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
        await send({"type": "lifespan.shutdown.complete"})

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan_protocol(receive, send)
            return
        mounted, slug = _book_of(scope.get("path", "")) if scope["type"] == "http" else (False, None)
        if not mounted:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        domain, _port = split_domain_port(headers.get("host", ""))
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            await _refuse(scope, receive, send, 400, {"message": f"不允许的 Host：{headers.get('host', '')}"})
            return
        if not self._running:
            await _refuse(
                scope, receive, send, 503, {"message": "MCP 服务未启动：需要以 ASGI lifespan 运行（uvicorn）"}
            )
            return
        try:
            access = await sync_to_async(_access_check_closing, thread_sensitive=True)(raw=_raw_key(headers), slug=slug)
        except DomainError as exc:
            extra = [(b"www-authenticate", b'Bearer realm="webnovel"')] if exc.status_code == 401 else []
            await _refuse(scope, receive, send, exc.status_code, exc.as_dict(), extra)
            return
        state = {**scope.get("state", {}), ACCESS_STATE_KEY: access}
        await self.manager.handle_request({**scope, "state": state}, receive, send)
