from django.db import models

from core.models import Book
from entities.models.entity import Entity
from entities.state_labels import state_change_sentence


class StateChange(models.Model):
    """One change of one field of an entity's state, in one chapter. The state of an entity is never
    stored: it is the replay of ``Entity.base_state`` and these rows in (chapter, seq) order, so
    "what was true at chapter N" is the same replay cut at N. Rows reference chapters by number
    (chapters are replaced on rebuild); a re-ingested chapter replaces its own rows of its source."""

    class Op(models.TextChoices):
        SET = "set", "设为"
        UNSET = "unset", "清除"
        ADD = "add", "加入"
        REMOVE = "remove", "移除"
        INC = "inc", "增加"

    class Source(models.TextChoices):
        EXTRACTION = "extraction", "抽取"
        TAG = "tag", "手工标签"
        CURATION = "curation", "人工校订"
        MIGRATION = "migration", "迁移"
        FILE = (
            "file",
            "设定文件",
        )  # issue 27: declared in a card's / roster entry's changes (re-derived from the folder)
        TIMELINE = "timeline", "时间线"  # issue 27: declared in a timeline row's 状态变化 (re-derived from the folder)

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="state_changes", verbose_name="书")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="state_changes", verbose_name="实体")
    chapter = models.PositiveIntegerField(verbose_name="章节")
    seq = models.PositiveIntegerField(default=0, help_text="同一章内的先后次序", verbose_name="章内次序")
    field = models.CharField(max_length=100, verbose_name="字段")
    op = models.CharField(max_length=10, choices=Op.choices, default=Op.SET, verbose_name="操作")
    old = models.JSONField(
        null=True, blank=True, help_text="来源声称的旧值（仅作核对，重放不依赖它）", verbose_name="旧值"
    )
    new = models.JSONField(
        null=True, blank=True, help_text="set 的新值 / add、remove 的元素 / inc 的增量", verbose_name="新值"
    )
    reason = models.TextField(blank=True, verbose_name="原因")
    confidence = models.FloatField(null=True, blank=True, verbose_name="置信度")
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.EXTRACTION, verbose_name="来源")
    created_at = models.DateTimeField(auto_now_add=True, verbose_name="创建时间")

    class Meta:
        ordering = ["entity_id", "chapter", "seq", "id"]
        indexes = [
            models.Index(fields=["entity", "chapter", "seq"], name="statechange_replay_idx"),
            models.Index(fields=["book", "chapter", "source"], name="statechange_chapter_idx"),
        ]
        verbose_name = "状态变更"
        verbose_name_plural = "状态变更"

    def __str__(self) -> str:
        return f"第{self.chapter}章 {state_change_sentence(field=self.field, op=self.op, new=self.new)}"
