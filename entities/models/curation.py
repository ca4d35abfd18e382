from django.db import models

from core.models import Book


class Extraction(models.Model):
    """The last Data Agent extraction ingested for a chapter: the raw payload, the warnings recorded
    for 0.5–0.8 confidence writes, and the parts kept as-is (scenes, chapter_meta, uncertain).
    One row per (book, chapter): re-ingesting replaces it and the chapter's extraction rows."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="extractions", verbose_name="书")
    chapter = models.PositiveIntegerField(verbose_name="章节")
    payload = models.JSONField(default=dict, verbose_name="内容")
    warnings = models.JSONField(default=list, blank=True, verbose_name="警告")
    scenes = models.JSONField(default=list, blank=True, verbose_name="场景")
    chapter_meta = models.JSONField(default=dict, blank=True, verbose_name="章节信息")
    uncertain = models.JSONField(default=list, blank=True, verbose_name="不确定项")
    summary = models.JSONField(default=dict, blank=True, help_text="写入计数", verbose_name="写入计数")
    source = models.CharField(
        max_length=20, default="extraction", help_text="从哪里来：抽取或迁移", verbose_name="来源"
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name="创建时间")
    updated_at = models.DateTimeField(auto_now=True, verbose_name="更新时间")

    class Meta:
        ordering = ["book_id", "chapter"]
        constraints = [models.UniqueConstraint(fields=["book", "chapter"], name="uniq_extraction_chapter")]
        verbose_name = "抽取结果"
        verbose_name_plural = "抽取结果"

    def __str__(self) -> str:
        return f"第{self.chapter}章抽取"


class PendingItem(models.Model):
    """A write held for a human: low-confidence extraction items (< 0.5), uncertain mentions,
    migrated disambiguation records and entities proposed by discovery (written to the roster file). Confirming applies the held write through the services."""

    class Kind(models.TextChoices):
        ENTITY_NEW = "entity_new", "新实体"
        ENTITY_APPEARED = "entity_appeared", "出场"
        STATE_CHANGE = "state_change", "状态变更"
        RELATIONSHIP = "relationship", "关系"
        UNCERTAIN = "uncertain", "不确定提及"
        DISAMBIGUATION = "disambiguation", "消歧"
        ENTITY_DISCOVERED = "entity_discovered", "发现的实体"

    class Status(models.TextChoices):
        PENDING = "pending", "待处理"
        CONFIRMED = "confirmed", "已确认"
        REJECTED = "rejected", "已拒绝"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="pending_items", verbose_name="书")
    chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="章节")
    kind = models.CharField(max_length=30, choices=Kind.choices, verbose_name="类型")
    payload = models.JSONField(default=dict, verbose_name="内容")
    confidence = models.FloatField(null=True, blank=True, verbose_name="置信度")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING, verbose_name="状态")
    resolution = models.JSONField(default=dict, blank=True, verbose_name="处理结果")
    note = models.TextField(blank=True, verbose_name="备注")
    source = models.CharField(
        max_length=20, default="extraction", help_text="从哪里来：抽取或迁移", verbose_name="来源"
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name="创建时间")
    resolved_at = models.DateTimeField(null=True, blank=True, verbose_name="处理时间")

    class Meta:
        ordering = ["status", "confidence", "chapter", "id"]
        indexes = [models.Index(fields=["book", "status", "confidence"], name="pending_queue_idx")]
        verbose_name = "待确认项"
        verbose_name_plural = "待确认队列"

    def __str__(self) -> str:
        return f"{self.get_kind_display()} 第{self.chapter}章 ({self.confidence})"


class LegacyRecord(models.Model):
    """A key of an old project's state.json kept verbatim (everything migrate_state did not map)."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="legacy_records", verbose_name="书")
    key = models.CharField(
        max_length=300, help_text="state.json 中的路径，如 plot_threads.foreshadowing", verbose_name="路径"
    )
    value = models.JSONField(null=True, blank=True, verbose_name="值")
    source_path = models.CharField(max_length=1000, blank=True, verbose_name="源文件")
    updated_at = models.DateTimeField(auto_now=True, verbose_name="更新时间")

    class Meta:
        ordering = ["book_id", "key"]
        constraints = [models.UniqueConstraint(fields=["book", "key"], name="uniq_legacy_key")]
        verbose_name = "遗留数据"
        verbose_name_plural = "遗留数据"

    def __str__(self) -> str:
        return self.key
