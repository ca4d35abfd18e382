from django.db import models

from core.models import Book
from entities.models.entity import Entity


class Appearance(models.Model):
    """An entity appearing in a chapter. ``scan`` rows come from the deterministic alias scan of the
    chapter text; ``extraction`` rows from the Data Agent's entities_appeared (with its own count)."""

    class Source(models.TextChoices):
        SCAN = "scan"
        EXTRACTION = "extraction"
        TAG = "tag"
        CURATION = "curation"
        MIGRATION = "migration"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="appearances")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="appearances")
    chapter = models.PositiveIntegerField()
    count = models.PositiveIntegerField(default=0)
    first_offset = models.IntegerField(null=True, blank=True, help_text="首次出现在正文中的字符偏移")
    aliases = models.JSONField(default=dict, blank=True, help_text="{别名: 次数}")
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.SCAN)

    class Meta:
        ordering = ["entity_id", "chapter", "source"]
        constraints = [
            models.UniqueConstraint(fields=["entity", "chapter", "source"], name="uniq_appearance"),
        ]
        indexes = [models.Index(fields=["book", "chapter"], name="appearance_chapter_idx")]
        verbose_name = "出场"
        verbose_name_plural = "出场"

    def __str__(self) -> str:
        return f"{self.entity_id} @ 第{self.chapter}章 ×{self.count}"


class AmbiguousMention(models.Model):
    """An alias found in a chapter that names several entities, or a generic alias (a weak mention,
    ``generic=True``, even with one candidate): reported, never guessed or counted as an appearance."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="ambiguous_mentions")
    chapter = models.PositiveIntegerField()
    alias = models.CharField(max_length=200)
    count = models.PositiveIntegerField(default=0)
    first_offset = models.IntegerField(null=True, blank=True)
    candidates = models.JSONField(default=list, help_text="候选实体 id")
    generic = models.BooleanField(default=False, help_text="泛称的弱提及（不计出场）")

    class Meta:
        ordering = ["book_id", "chapter", "alias"]
        constraints = [models.UniqueConstraint(fields=["book", "chapter", "alias"], name="uniq_ambiguous_mention")]
        verbose_name = "歧义提及"
        verbose_name_plural = "歧义提及"

    def __str__(self) -> str:
        return f"第{self.chapter}章 '{self.alias}' ×{self.count}"


class TagApplication(models.Model):
    """What the manual tags of a chapter did when it was finalized, and the tags that were skipped."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="tag_applications")
    chapter = models.PositiveIntegerField()
    applied = models.JSONField(default=list, blank=True)
    issues = models.JSONField(default=list, blank=True, help_text='[{"line", "text", "message"}]')
    applied_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["book_id", "chapter"]
        constraints = [models.UniqueConstraint(fields=["book", "chapter"], name="uniq_tag_application")]
        verbose_name = "手工标签应用"
        verbose_name_plural = "手工标签应用"

    def __str__(self) -> str:
        return f"第{self.chapter}章标签"
