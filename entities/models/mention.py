from django.db import models

from core.models import Book
from entities.models.entity import Entity


class Appearance(models.Model):
    """An entity appearing in a chapter. ``scan`` rows come from the deterministic alias scan of the
    chapter text; ``extraction`` rows from the Data Agent's entities_appeared (with its own count)."""

    class Source(models.TextChoices):
        SCAN = "scan", "正文扫描"
        EXTRACTION = "extraction", "抽取"
        TAG = "tag", "手工标签"
        CURATION = "curation", "人工校订"
        MIGRATION = "migration", "迁移"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="appearances", verbose_name="书")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="appearances", verbose_name="实体")
    chapter = models.PositiveIntegerField(verbose_name="章节")
    count = models.PositiveIntegerField(default=0, verbose_name="提及次数")
    first_offset = models.IntegerField(
        null=True, blank=True, help_text="首次出现在正文中的字符偏移", verbose_name="首次出现位置"
    )
    aliases = models.JSONField(default=dict, blank=True, help_text="{别名: 次数}", verbose_name="别名次数")
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.SCAN, verbose_name="来源")

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

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="ambiguous_mentions", verbose_name="书")
    chapter = models.PositiveIntegerField(verbose_name="章节")
    alias = models.CharField(max_length=200, verbose_name="别名")
    count = models.PositiveIntegerField(default=0, verbose_name="提及次数")
    first_offset = models.IntegerField(null=True, blank=True, verbose_name="首次出现位置")
    candidates = models.JSONField(default=list, help_text="候选实体 id", verbose_name="候选实体")
    generic = models.BooleanField(default=False, help_text="泛称的弱提及（不计出场）", verbose_name="泛称")

    class Meta:
        ordering = ["book_id", "chapter", "alias"]
        constraints = [models.UniqueConstraint(fields=["book", "chapter", "alias"], name="uniq_ambiguous_mention")]
        verbose_name = "歧义提及"
        verbose_name_plural = "歧义提及"

    def __str__(self) -> str:
        return f"第{self.chapter}章 '{self.alias}' ×{self.count}"


class TagApplication(models.Model):
    """What the manual tags of a chapter did when it was finalized, and the tags that were skipped."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="tag_applications", verbose_name="书")
    chapter = models.PositiveIntegerField(verbose_name="章节")
    applied = models.JSONField(default=list, blank=True, verbose_name="已应用")
    issues = models.JSONField(default=list, blank=True, help_text='[{"line", "text", "message"}]', verbose_name="问题")
    applied_at = models.DateTimeField(auto_now=True, verbose_name="应用时间")

    class Meta:
        ordering = ["book_id", "chapter"]
        constraints = [models.UniqueConstraint(fields=["book", "chapter"], name="uniq_tag_application")]
        verbose_name = "手工标签应用"
        verbose_name_plural = "手工标签应用"

    def __str__(self) -> str:
        return f"第{self.chapter}章标签"
