from django.db import models

from core.models import Book
from entities.models.entity import Entity


class StateChange(models.Model):
    """One change of one field of an entity's state, in one chapter. The state of an entity is never
    stored: it is the replay of ``Entity.base_state`` and these rows in (chapter, seq) order, so
    "what was true at chapter N" is the same replay cut at N. Rows reference chapters by number
    (chapters are replaced on rebuild); a re-ingested chapter replaces its own rows of its source."""

    class Op(models.TextChoices):
        SET = "set"
        UNSET = "unset"
        ADD = "add"
        REMOVE = "remove"
        INC = "inc"

    class Source(models.TextChoices):
        EXTRACTION = "extraction"
        TAG = "tag"
        CURATION = "curation"
        MIGRATION = "migration"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="state_changes")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="state_changes")
    chapter = models.PositiveIntegerField()
    seq = models.PositiveIntegerField(default=0, help_text="同一章内的先后次序")
    field = models.CharField(max_length=100)
    op = models.CharField(max_length=10, choices=Op.choices, default=Op.SET)
    old = models.JSONField(null=True, blank=True, help_text="来源声称的旧值（仅作核对，重放不依赖它）")
    new = models.JSONField(null=True, blank=True, help_text="set 的新值 / add、remove 的元素 / inc 的增量")
    reason = models.TextField(blank=True)
    confidence = models.FloatField(null=True, blank=True)
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.EXTRACTION)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["entity_id", "chapter", "seq", "id"]
        indexes = [
            models.Index(fields=["entity", "chapter", "seq"], name="statechange_replay_idx"),
            models.Index(fields=["book", "chapter", "source"], name="statechange_chapter_idx"),
        ]
        verbose_name = "状态变更"
        verbose_name_plural = "状态变更"

    def __str__(self) -> str:
        return f"第{self.chapter}章 {self.field} {self.op} {self.new!r}"
