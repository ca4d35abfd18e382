from django.db import models

from core.models import Book
from entities.models.entity import Entity


class Relationship(models.Model):
    """A directed relationship (from, to, type), unique per triple. ``description`` and ``chapter``
    summarise its event history (latest description, first chapter); the events are the truth, so
    a re-ingested chapter can drop its own events and the summary is recomputed."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="relationships", verbose_name="书")
    from_entity = models.ForeignKey(
        Entity, on_delete=models.CASCADE, related_name="relationships_out", verbose_name="一方"
    )
    to_entity = models.ForeignKey(
        Entity, on_delete=models.CASCADE, related_name="relationships_in", verbose_name="另一方"
    )
    type = models.CharField(max_length=100, verbose_name="关系")
    description = models.TextField(blank=True, verbose_name="描述")
    chapter = models.PositiveIntegerField(null=True, blank=True, help_text="建立关系的章节", verbose_name="建立章")
    last_chapter = models.PositiveIntegerField(
        null=True, blank=True, help_text="最近一次变化的章节", verbose_name="最近变化章"
    )

    class Meta:
        ordering = ["book_id", "from_entity_id", "type", "to_entity_id"]
        constraints = [
            models.UniqueConstraint(fields=["from_entity", "to_entity", "type"], name="uniq_relationship_triple")
        ]
        indexes = [models.Index(fields=["book", "to_entity"], name="relationship_to_idx")]
        verbose_name = "关系"
        verbose_name_plural = "关系"

    def __str__(self) -> str:
        return f"{self.from_entity.canonical_name} —{self.type}→ {self.to_entity.canonical_name}"


class RelationshipEvent(models.Model):
    """What changed in a relationship and when (established, described anew)."""

    class Source(models.TextChoices):
        EXTRACTION = "extraction", "抽取"
        TAG = "tag", "手工标签"
        CURATION = "curation", "人工校订"
        MIGRATION = "migration", "迁移"

    relationship = models.ForeignKey(Relationship, on_delete=models.CASCADE, related_name="events", verbose_name="关系")
    chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="章节")
    description = models.TextField(blank=True, verbose_name="描述")
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.EXTRACTION, verbose_name="来源")
    created_at = models.DateTimeField(auto_now_add=True, verbose_name="创建时间")

    class Meta:
        ordering = ["relationship_id", "chapter", "id"]
        indexes = [models.Index(fields=["chapter", "source"], name="relevent_chapter_idx")]
        verbose_name = "关系事件"
        verbose_name_plural = "关系事件"

    def __str__(self) -> str:
        return f"第{self.chapter}章：{self.description[:30]}"
