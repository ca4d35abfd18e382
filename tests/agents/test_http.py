"""The MCP server over streamable HTTP, through the real ASGI stack: ``webnovel.asgi`` served by
uvicorn on a free port (in a thread of this process, so it shares the test database), with API keys
of both scopes and a key of another book; the pages and static files still come through Django."""

import json
import threading
import time

import httpx2
import pytest
import uvicorn
from anyio.from_thread import start_blocking_portal
from django.db import DEFAULT_DB_ALIAS, connections
from django.test import Client as DjangoClient
from django.test import override_settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from kernel.interfaces import interfaces_load
from tests.agents.conftest import McpSession

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def server_url(django_db_setup):
    # A fresh application (the SDK's session manager runs once per instance), with whitenoise serving
    # from the apps' static folders: the test run has no collectstatic.
    with override_settings(WHITENOISE_USE_FINDERS=True):
        from django.core.asgi import get_asgi_application

        from agents.http import McpMount

        app = McpMount(get_asgi_application())
    # The server runs Django in asgiref's worker threads, whose connections would outlive the module
    # (CONN_MAX_AGE): an open SQLite connection keeps later tests from taking an exclusive lock. Connections
    # made while the server runs close at the end of each request instead.
    settings_dict = connections.settings[DEFAULT_DB_ALIAS]
    max_age = settings_dict.get("CONN_MAX_AGE")
    settings_dict["CONN_MAX_AGE"] = 0
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    settings_dict["CONN_MAX_AGE"] = max_age


@pytest.fixture
def keys(demo):
    from core.models import Book
    from core.services import apikey_create

    other = Book.objects.create(slug="other-book", root="/nonexistent")
    return {
        "read": apikey_create(name="r", scope="read")[1],
        "write": apikey_create(name="w", scope="write", book=demo)[1],
        "other": apikey_create(name="o", scope="write", book=other)[1],
    }


def mcp_session(url: str, key: str):
    from contextlib import contextmanager

    @contextmanager
    def session():
        with start_blocking_portal() as portal:
            http = portal.wrap_async_context_manager(httpx2.AsyncClient(headers={"X-API-Key": key}))
            with http as client_http:
                transport = streamable_http_client(url, http_client=client_http)
                with portal.wrap_async_context_manager(Client(transport)) as client:
                    yield McpSession(portal, client)

    return session()


def test_a_read_key_sees_the_reads_and_no_write(server_url, keys):
    with mcp_session(f"{server_url}/mcp/demo-book", keys["read"]) as session:
        assert set(session.tools()) == set(interfaces_load()) | {"continuity-check"}  # it writes nothing
        draft = "---\nchapter: 25\n---\n赵乾冷笑道：“你们谁也走不了。”\n"
        checked = session.call("continuity-check", {"text": draft})
        rest_check = DjangoClient(HTTP_X_API_KEY=keys["read"]).post(
            "/api/books/demo-book/continuity", {"text": draft}, content_type="application/json"
        )
        assert rest_check.status_code == 200
        assert (checked.is_error, json.loads(checked.content[0].text)) == (False, rest_check.json())
        result = session.call("chapter-summary", {"number": 12})
        rest = DjangoClient(HTTP_X_API_KEY=keys["read"]).get("/api/books/demo-book/chapters/12/summary").json()
        assert (result.is_error, result.content[0].text) == (False, rest)
        refused = session.call("pending-reject", {"pk": 1})
        assert refused.is_error
        assert json.loads(refused.content[0].text)["message"] == "该 API 密钥只有读权限，写操作需要 write 密钥"


def test_a_write_key_of_the_book_gets_the_writes_with_rest_s_errors(server_url, keys):
    with mcp_session(f"{server_url}/mcp/demo-book", keys["write"]) as session:
        assert {"extraction-ingest", "pending-confirm", "chapter-finalize"} <= set(session.tools())
        result = session.call("pending-reject", {"pk": 987654})
        rest = DjangoClient(HTTP_X_API_KEY=keys["write"]).post(
            "/api/books/demo-book/entities/pending/987654/reject", {}, content_type="application/json"
        )
        body = json.loads(result.content[0].text)
        assert (body.pop("status"), body) == (rest.status_code, rest.json()) == (404, rest.json())


def test_a_book_scoped_key_serves_its_book_at_the_bare_mount(server_url, keys):
    with mcp_session(f"{server_url}/mcp", keys["write"]) as session:
        stats = json.loads(session.call("report-stats").content[0].text)
        assert stats["chapters"] == 24


def _post(url: str, key: str | None) -> httpx2.Response:
    headers = {**MCP_HEADERS, **({"x-api-key": key} if key else {})}
    return httpx2.post(url, headers=headers, content=json.dumps(INITIALIZE))


def _refusal(resp: httpx2.Response) -> tuple[int, dict]:
    """A refusal before the MCP server: its HTTP status, and REST's body from its JSON-RPC error."""
    body = resp.json()
    assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", 1, -32600)
    assert body["error"]["data"]["status"] == resp.status_code
    return resp.status_code, {"message": body["error"]["message"], "extra": body["error"]["data"]["extra"]}


def test_a_key_of_another_book_sees_nothing_of_this_book(server_url, keys):
    resp = _post(f"{server_url}/mcp/demo-book", keys["other"])
    rest = DjangoClient(HTTP_X_API_KEY=keys["other"]).get("/api/books/demo-book/reports/stats")
    assert _refusal(resp) == (rest.status_code, rest.json()) == (403, rest.json())
    assert rest.json()["message"] == "该 API 密钥不能访问书籍 'demo-book'"


def test_no_key_unknown_key_and_unknown_book(server_url, keys):
    for key in (None, "wn_not-a-key"):
        resp = _post(f"{server_url}/mcp/demo-book", key)
        assert (resp.status_code, resp.headers["www-authenticate"]) == (401, 'Bearer realm="webnovel"')
        assert _refusal(resp)[1]["message"].startswith("需要认证：请提供 X-API-Key")
    resp = _post(f"{server_url}/mcp/nobook", keys["read"])
    assert _refusal(resp) == (404, {"message": "书籍 'nobook' 不存在", "extra": {"book": "nobook"}})
    resp = _post(f"{server_url}/mcp", keys["read"])  # a key of every book must name one
    assert _refusal(resp)[0] == 404 and _refusal(resp)[1]["extra"] == {"path": "/mcp"}


def _first(exc: BaseException, kind: type) -> BaseException:
    """The first ``kind`` in an exception, its exception groups and its causes."""
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if isinstance(current, kind):
            return current
        todo += [*getattr(current, "exceptions", ()), *(e for e in (current.__cause__, current.__context__) if e)]
    raise AssertionError(f"no {kind.__name__} in {exc!r}")


def test_the_sdk_client_shows_the_chinese_reason_of_a_refusal(server_url, keys):
    from mcp import MCPError

    for path, key, message, status in (
        ("/mcp/demo-book", keys["other"], "该 API 密钥不能访问书籍 'demo-book'", 403),
        ("/mcp/nobook", keys["read"], "书籍 'nobook' 不存在", 404),
        (
            "/mcp/demo-book",
            "wn_not-a-key",
            "需要认证：请提供 X-API-Key 或 Authorization: Bearer 密钥（MCP 不接受后台登录）",
            401,
        ),
    ):
        with pytest.raises(BaseException) as raised, mcp_session(f"{server_url}{path}", key):
            pass
        refused = _first(raised.value, MCPError)  # the SDK raises it from its task group
        assert (refused.error.message, refused.error.data["status"]) == (message, status)


def test_the_first_call_on_an_empty_database_builds_the_book(server_url, transactional_db):
    # No `demo` fixture: the database has no book; the folder is in WEBNOVEL_BOOKS_DIR (core/lazybuild.py).
    from core.models import Book
    from core.services import apikey_create
    from tests.conftest import DEMO_BOOK

    raw = apikey_create(name="all", scope="read")[1]
    with override_settings(WEBNOVEL_BOOKS_DIR=DEMO_BOOK.parent):
        assert not Book.objects.exists()
        with mcp_session(f"{server_url}/mcp/demo-book", raw) as session:
            stats = json.loads(session.call("report-stats").content[0].text)
    assert stats["chapters"] == 24
    assert Book.objects.get().slug == "demo-book"


def test_bearer_keys_work_like_x_api_key(server_url, keys):
    headers = {**MCP_HEADERS, "authorization": f"Bearer {keys['read']}"}
    resp = httpx2.post(f"{server_url}/mcp/demo-book", headers=headers, content=json.dumps(INITIALIZE))
    assert resp.status_code == 200
    assert resp.json()["result"]["serverInfo"]["name"] == "webnovel"


def test_django_still_serves_the_api_pages_and_static_files(server_url, keys):
    assert (
        httpx2.get(f"{server_url}/api/books/demo-book/reports/stats", headers={"x-api-key": keys["read"]}).json()[
            "chapters"
        ]
        == 24
    )
    static = httpx2.get(f"{server_url}/static/admin/css/base.css")
    assert (static.status_code, static.headers["content-type"].split(";")[0]) == (200, "text/css")
    page = httpx2.get(f"{server_url}/dashboard/")
    assert (page.status_code, page.headers["location"].split("?")[0]) == (302, "/admin/login/")


def test_the_asgi_entry_point_mounts_the_mcp_server():
    import webnovel.asgi
    from agents.http import McpMount

    assert isinstance(webnovel.asgi.application, McpMount)


@override_settings(WEBNOVEL_CONTINUITY_RATE="3/60")
def test_the_draft_check_is_rate_limited_per_key_across_rest_and_mcp(server_url, keys):
    """Issue 25 C1: a read key may send a 200k-character draft; the check is counted like the regex search."""
    body = {"text": "---\nchapter: 25\n---\n林风拔剑。\n"}
    rest = DjangoClient(HTTP_X_API_KEY=keys["read"])
    url = "/api/books/demo-book/continuity"
    with mcp_session(f"{server_url}/mcp/demo-book", keys["read"]) as session:
        assert session.call("continuity-check", body).is_error is False
        assert rest.post(url, body, content_type="application/json").status_code == 200
        assert rest.get("/api/books/demo-book/continuity", {"start": 24}).status_code == 200  # the range check
        refused = session.call("continuity-check", body)
        answer = json.loads(refused.content[0].text)
        assert (refused.is_error, answer["status"]) == (True, 429)
        assert answer["message"].startswith("机检过于频繁：每 60 秒最多 3 次，请 ")
        also = rest.post(url, body, content_type="application/json")
        assert (also.status_code, also.json()["message"][:12]) == (429, answer["message"][:12])
    with mcp_session(f"{server_url}/mcp/demo-book", keys["write"]) as session:
        assert session.call("continuity-check", body).is_error is False  # another key has its own budget


@override_settings(WEBNOVEL_REGEX_RATE="3/60")
def test_regex_search_is_rate_limited_per_key_with_rest_s_429(server_url, keys):
    url, args = "/api/books/demo-book/search/regex", {"pattern": "林."}
    rest = DjangoClient(HTTP_X_API_KEY=keys["read"])
    with mcp_session(f"{server_url}/mcp/demo-book", keys["read"]) as session:
        assert [session.call("search-regex", args).is_error for _ in range(2)] == [False, False]
        assert rest.get(url, args).status_code == 200  # the third of the key's one budget across doors
        refused = session.call("search-regex", args)
        body = json.loads(refused.content[0].text)
        assert (refused.is_error, body.pop("status")) == (True, 429)
        assert body["message"].startswith("正则搜索过于频繁：每 60 秒最多 3 次，请 ")
        assert 1 <= body["extra"].pop("retry_after") <= 60
        assert body["extra"] == {"limit": 3, "seconds": 60.0}
        also = rest.get(url, args)
        assert (also.status_code, also.json()["message"][:20]) == (429, body["message"][:20])
        assert not session.call("search", {"q": "林风"}).is_error  # keyword search is not limited
    with mcp_session(f"{server_url}/mcp/demo-book", keys["write"]) as session:
        assert not session.call("search-regex", args).is_error  # another key has its own budget


@override_settings(WEBNOVEL_REGEX_RATE="3/60")
def test_the_local_author_on_stdio_access_is_not_rate_limited(demo):
    from agents.server import Access, tool_call
    from core.selectors import book_get

    local = Access(book=lambda: book_get(slug="demo-book"), write=True)  # what `manage.py mcp` serves
    assert [tool_call(local, "search-regex", {"pattern": "林."}).is_error for _ in range(5)] == [False] * 5
