"""Writes of the core. Every service is atomic; the rebuilder lives in ``bookfiles.rebuilder``."""

from django.db import transaction

from core.models import ApiKey, Book
from core.models.apikey import apikey_hash
from kernel.exceptions import InvalidInput, NotFound


@transaction.atomic
def apikey_create(*, name: str, scope: str = "read", book: Book | None = None) -> tuple[ApiKey, str]:
    """Create an API key and return it with its raw value (shown once; only the hash is stored)."""
    if scope not in ApiKey.Scope.values:
        raise InvalidInput(f"未知的权限范围 '{scope}'，可选 read / write", extra={"scope": scope})
    raw = ApiKey.generate_raw()
    key = ApiKey.objects.create(name=name, prefix=raw[:10], key_hash=apikey_hash(raw), scope=scope, book=book)
    return key, raw


@transaction.atomic
def apikey_revoke(*, prefix: str) -> int:
    """Revoke every key whose prefix matches; returns how many were revoked."""
    count = ApiKey.objects.filter(prefix=prefix, revoked=False).update(revoked=True)
    if count == 0:
        raise NotFound(f"没有以 '{prefix}' 开头的有效密钥", extra={"prefix": prefix})
    return count
