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

    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="密钥开头，便于辨认")
    key_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.READ)
    book = models.ForeignKey(
        Book, null=True, blank=True, on_delete=models.CASCADE, related_name="api_keys", help_text="留空表示所有书"
    )
    revoked = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API 密钥"
        verbose_name_plural = "API 密钥"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.scope})"

    @staticmethod
    def generate_raw() -> str:
        return "wn_" + secrets.token_urlsafe(32)
