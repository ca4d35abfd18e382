"""API authentication: hashed API keys (header ``X-API-Key`` or ``Authorization: Bearer``) or the
admin session (with CSRF on writes). Checked here, in one place, for every endpoint:

- a key's scope (read / write) and book: writes need a write key, and a book-scoped key only opens
  its book — the book is the resolved route's ``book`` argument (the slug the operation receives), so
  a URL prefix (``SCRIPT_NAME``, ``FORCE_SCRIPT_NAME``) cannot move it;
- a session user's model permissions, like a key's scope: reads need ``webnovel.view_book`` and the
  app's view permission, writes also its add and change permissions (``SESSION_PERMISSIONS``). They
  apply to every book (Django's permissions are per model, not per row); superusers have them all;
- a write is any method but GET / HEAD / OPTIONS, except an operation declared with
  ``auth=api_auth(app, reads=True)``: a POST that only computes an answer from its body (the draft check
  ``POST …/continuity``) is a read for the key's scope and the session's permissions (CSRF still applies).
  That declaration is the one way to let a read key POST; an operation that writes must never use it.

Authentication writes nothing a reader must wait for: a key's ``last_used_at`` is a best-effort,
coarse stamp that gives up at once when the database is busy (``apikey_touch``)."""

import math
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import APIKeyHeader, HttpBearer
from ninja.security.session import SessionAuth
from ninja.utils import check_csrf

from core.models import ApiKey
from core.models.apikey import apikey_hash
from kernel.busy import write_if_free
from kernel.exceptions import DomainError, PermissionDenied, RateLimited
from kernel.ratelimit import limiter_for

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
_LAST_USED_RESOLUTION = timedelta(minutes=1)

# app → (the permission a session read needs, the model whose add + change a session write needs).
SESSION_PERMISSIONS: dict[str, tuple[str, str]] = {
    "webnovel": ("webnovel.view_book", "webnovel.book"),
    "threads": ("threads.view_thread", "threads.thread"),
    "entities": ("entities.view_entity", "entities.entity"),
    "storysystem": ("storysystem.view_storysetting", "storysystem.storysetting"),
    "memory": ("memory.view_fact", "memory.fact"),
}


def request_book(request: HttpRequest) -> str | None:
    """The book slug the resolved route passes to its operation (None for routes without a book)."""
    match = getattr(request, "resolver_match", None)
    return match.kwargs.get("book") if match is not None else None


def apikey_touch(key: ApiKey) -> None:
    """Stamp ``last_used_at`` (at most once a minute) if the database is free right now, else skip it:
    a read never waits for a writer to record that it happened (``kernel.busy.write_if_free``)."""
    now = timezone.now()
    if key.last_used_at is not None and now - key.last_used_at <= _LAST_USED_RESOLUTION:
        return
    write_if_free(lambda: ApiKey.objects.filter(pk=key.pk).update(last_used_at=now))


class RevokedKey(DomainError):
    """A key that exists but was revoked: a 401 that says so (an unknown key gets the plain 401)."""

    status_code = 401


def request_writes(request: HttpRequest, *, reads: bool = False) -> bool:
    """Whether the request is a write for scopes and permissions (``reads``: the operation declares it writes nothing)."""
    return request.method not in SAFE_METHODS and not reads


def apikey_check(request: HttpRequest, raw: str | None, *, reads: bool = False) -> ApiKey | None:
    """Return the live key for ``raw`` after checking its scope and book against the request."""
    if not raw:
        return None
    key = ApiKey.objects.select_related("book").filter(key_hash=apikey_hash(raw)).first()
    if key is None:
        return None
    if key.revoked:
        raise RevokedKey(
            f"需要认证：API 密钥 {key.prefix}… 已被吊销，请换用新的密钥（make run 每次启动都会轮换演示密钥并打印新值）",
            extra={"key": key.prefix, "revoked": True},
        )
    if request_writes(request, reads=reads) and key.scope != ApiKey.Scope.WRITE:
        raise PermissionDenied("该 API 密钥只有读权限，写操作需要 write 密钥", extra={"key": key.prefix})
    book = request_book(request)
    if key.book_id is not None and book is not None and book != key.book.slug:
        raise PermissionDenied(f"该 API 密钥不能访问书籍 '{book}'", extra={"key": key.prefix, "book": book})
    apikey_touch(key)
    return key


class ApiKeyHeaderAuth(APIKeyHeader):
    param_name = "X-API-Key"

    def __init__(self, *, reads: bool = False) -> None:
        super().__init__()
        self.reads = reads

    def authenticate(self, request: HttpRequest, key: str | None) -> ApiKey | None:
        return apikey_check(request, key, reads=self.reads)


class ApiKeyBearerAuth(HttpBearer):
    def __init__(self, *, reads: bool = False) -> None:
        super().__init__()
        self.reads = reads

    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        return apikey_check(request, token, reads=self.reads)


class SessionPermissionAuth(SessionAuth):
    """The admin session, for one app's router: logged in first (else 401, not a CSRF 403), then
    the CSRF token on writes, then the app's model permissions (403 naming the missing ones)."""

    def __init__(self, app: str, *, reads: bool = False) -> None:
        super().__init__(csrf=True)
        self.app = app
        self.reads = reads

    def __call__(self, request: HttpRequest):
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if request.method not in SAFE_METHODS and not getattr(request, "_ninja_csrf_exempt", False):
            if check_csrf(request) is not None:
                raise PermissionDenied("CSRF 校验失败：后台登录的写请求需要 X-CSRFToken 请求头", extra={"csrf": True})
        method = "GET" if not request_writes(request, reads=self.reads) else request.method
        missing = [perm for perm in session_permissions_needed(self.app, method) if not user.has_perm(perm)]
        if missing:
            raise PermissionDenied(
                f"账号 '{user.get_username()}' 缺少权限：{'、'.join(missing)}", extra={"missing_permissions": missing}
            )
        return user


def session_permissions_needed(app: str, method: str) -> list[str]:
    """The permissions a session request of ``method`` to ``app``'s endpoints needs."""
    read, model = SESSION_PERMISSIONS[app]
    needed = ["webnovel.view_book", read] if read != "webnovel.view_book" else [read]
    if method not in SAFE_METHODS:
        label, name = model.split(".")
        needed += [f"{label}.add_{name}", f"{label}.change_{name}"]
    return needed


def key_caller(key: ApiKey) -> str:
    """The rate-limit caller of an API key, the same through every door (REST, MCP over HTTP)."""
    return f"key:{key.prefix}"


def user_caller(user: Any) -> str:
    """The rate-limit caller of a signed-in user, the same at every door (REST's session, the dashboard)."""
    return f"user:{user.pk}"


def caller_id(request: HttpRequest) -> str:
    """Who is calling, for rate limits: the key's prefix, the session user, else the client address."""
    auth = getattr(request, "auth", None)
    if isinstance(auth, ApiKey):
        return key_caller(auth)
    if auth is not None and getattr(auth, "pk", None) is not None:
        return user_caller(auth)
    return f"ip:{request.META.get('REMOTE_ADDR', '')}"


def rate_check(request: HttpRequest, *, setting: str, what: str) -> None:
    """Count one ``what`` for the request's caller (``rate_count``)."""
    rate_count(caller=caller_id(request), setting=setting, what=what)


def rate_count(*, caller: str, setting: str, what: str) -> None:
    """Count one ``what`` for ``caller`` against ``settings.<setting>`` ("count/seconds"); over the
    limit, RateLimited (429 with Retry-After) naming the limit. One count per caller across doors."""
    limiter = limiter_for(getattr(settings, setting))
    wait = limiter.hit(f"{setting}:{caller}")
    if wait:
        retry = max(1, math.ceil(wait))
        raise RateLimited(
            f"{what}过于频繁：每 {limiter.seconds:g} 秒最多 {limiter.count} 次，请 {retry} 秒后重试",
            retry_after=retry,
            extra={"limit": limiter.count, "seconds": limiter.seconds},
        )


def api_auth(app: str, *, reads: bool = False) -> list:
    """The authentication of one app's router: a key, or a session with that app's permissions.

    ``reads=True``, on one operation (``@router.post(…, auth=api_auth(app, reads=True))``): the operation
    writes nothing, so a read key and a session with the view permissions may call it whatever its method."""
    return [ApiKeyHeaderAuth(reads=reads), ApiKeyBearerAuth(reads=reads), SessionPermissionAuth(app, reads=reads)]


API_AUTH = api_auth("webnovel")
