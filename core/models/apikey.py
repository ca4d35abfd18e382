import hashlib
import secrets

from django.db import models

from core.models.book import Book


def apikey_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class ApiKey(models.Model):
    """An API key: stored as a SHA-256 hash (the raw key is shown once), scoped to read or write
    and optionally to one book, and revocable."""

    class Scope(models.TextChoices):
        READ = "read", "只读"
        WRITE = "write", "读写"

    name = models.CharField(max_length=100, verbose_name="名称")
    prefix = models.CharField(max_length=12, help_text="密钥开头，便于辨认", verbose_name="前缀")
    key_hash = models.CharField(max_length=64, unique=True, verbose_name="密钥哈希")
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.READ, verbose_name="权限范围")
    book = models.ForeignKey(
        Book,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="api_keys",
        help_text="留空表示所有书",
        verbose_name="限定的书",
    )
    revoked = models.BooleanField(default=False, verbose_name="已吊销")
    created_at = models.DateTimeField(auto_now_add=True, verbose_name="创建时间")
    last_used_at = models.DateTimeField(null=True, blank=True, verbose_name="最近使用")

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API 密钥"
        verbose_name_plural = "API 密钥"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.scope})"

    @staticmethod
    def generate_raw() -> str:
        return "wn_" + secrets.token_urlsafe(32)
