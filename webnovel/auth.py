"""API authentication: hashed API keys (header ``X-API-Key`` or ``Authorization: Bearer``) or the
admin session (with CSRF on writes). A key's scope (read / write) and book are checked here, in one
place, for every endpoint: writes need a write key, and a book-scoped key only opens its book."""

import re
from datetime import timedelta

from django.http import HttpRequest
from django.utils import timezone
from ninja.security import APIKeyHeader, HttpBearer, django_auth

from webnovel.exceptions import PermissionDenied
from webnovel.models import ApiKey
from webnovel.models.apikey import apikey_hash

_BOOK_IN_PATH = re.compile(r"^/api/books/([^/]+)/")
_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
_LAST_USED_RESOLUTION = timedelta(minutes=1)


def apikey_check(request: HttpRequest, raw: str | None) -> ApiKey | None:
    """Return the live key for ``raw`` after checking its scope and book against the request."""
    if not raw:
        return None
    key = ApiKey.objects.select_related("book").filter(key_hash=apikey_hash(raw), revoked=False).first()
    if key is None:
        return None
    if request.method not in _SAFE_METHODS and key.scope != ApiKey.Scope.WRITE:
        raise PermissionDenied("该 API 密钥只有读权限，写操作需要 write 密钥", extra={"key": key.prefix})
    match = _BOOK_IN_PATH.match(request.path)
    if key.book_id is not None and match and match.group(1) != key.book.slug:
        raise PermissionDenied(f"该 API 密钥不能访问书籍 '{match.group(1)}'", extra={"key": key.prefix})
    now = timezone.now()
    # Write "last used" at most once a minute per key: a write per read request would make every
    # read contend for SQLite's single writer lock under load.
    if key.last_used_at is None or now - key.last_used_at > _LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key


class ApiKeyHeaderAuth(APIKeyHeader):
    param_name = "X-API-Key"

    def authenticate(self, request: HttpRequest, key: str | None) -> ApiKey | None:
        return apikey_check(request, key)


class ApiKeyBearerAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        return apikey_check(request, token)


API_AUTH = [ApiKeyHeaderAuth(), ApiKeyBearerAuth(), django_auth]
