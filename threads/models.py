from django.db import models

from core.models import Book


class Thread(models.Model):
    """A 伏笔 / 悬念 / 感情线 (线索/<id>*.md). The type is the id's prefix."""

    class Type(models.TextChoices):
        FORESHADOWING = "伏笔"
        SUSPENSE = "悬念"
        ROMANCE = "感情线"

    class Strength(models.TextChoices):
        HIGH = "高"
        MEDIUM = "中"
        LOW = "低"

    class Status(models.TextChoices):
        OPEN = "进行"
        CLOSED = "已收尾"
        ABANDONED = "已放弃"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="threads")
    thread_id = models.CharField(max_length=50, help_text="如 伏笔-031")
    type = models.CharField(max_length=10, choices=Type.choices)
    title = models.CharField(max_length=200, blank=True)
    strength = models.CharField(max_length=2, choices=Strength.choices, default=Strength.MEDIUM)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    opened_chapter = models.PositiveIntegerField(null=True, blank=True)
    planned_end = models.PositiveIntegerField(null=True, blank=True, help_text="计划收尾章（写作章号时）")
    planned_end_volume = models.PositiveIntegerField(
        null=True, blank=True, help_text="计划收尾卷（写作「第N卷」时；该卷最后一章在查询时由 book.yaml 得出）"
    )
    closed_chapter = models.PositiveIntegerField(null=True, blank=True)
    description = models.TextField(blank=True)
    closing_plan = models.TextField(blank=True)
    front_matter = models.JSONField(default=dict, blank=True)
    source_path = models.CharField(max_length=1000, blank=True)

    class Meta:
        ordering = ["book", "thread_id"]
        constraints = [models.UniqueConstraint(fields=["book", "thread_id"], name="uniq_thread_id")]
        indexes = [models.Index(fields=["book", "type", "status"], name="thread_type_status_idx")]
        verbose_name = "线索"
        verbose_name_plural = "线索"

    def __str__(self) -> str:
        return f"{self.thread_id} {self.title}"

    @property
    def planned_end_label(self) -> str:
        """``planned_end`` as the author wrote it: 第40章, 第7卷, or '' when it has none."""
        if self.planned_end is not None:
            return f"第{self.planned_end}章"
        if self.planned_end_volume is not None:
            return f"第{self.planned_end_volume}卷"
        return ""


class ThreadHistoryEntry(models.Model):
    """One line of a thread's 履历: what happened, citing the evidence chapter."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="history")
    order = models.PositiveIntegerField()
    chapter = models.PositiveIntegerField(null=True, blank=True)
    text = models.TextField()

    class Meta:
        ordering = ["thread", "order"]
        constraints = [models.UniqueConstraint(fields=["thread", "order"], name="uniq_thread_history_order")]
        verbose_name = "线索履历"
        verbose_name_plural = "线索履历"

    def __str__(self) -> str:
        return f"第{self.chapter}章：{self.text[:30]}"


class Secret(models.Model):
    """An 信息差 (信息差/<id>*.md): who knows it, whether the reader knows, and its keywords."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="secrets")
    secret_id = models.CharField(max_length=50, help_text="如 信息差-021")
    title = models.CharField(max_length=200, blank=True)
    known_to = models.JSONField(default=list, blank=True, help_text='[{"name": "萧炎", "since": 12}]')
    reader_knows = models.BooleanField(default=False)
    reader_told_chapter = models.PositiveIntegerField(null=True, blank=True)
    registered_chapter = models.PositiveIntegerField(null=True, blank=True)
    keywords = models.JSONField(default=list, blank=True)
    content = models.TextField(blank=True)
    front_matter = models.JSONField(default=dict, blank=True)
    source_path = models.CharField(max_length=1000, blank=True)

    class Meta:
        ordering = ["book", "secret_id"]
        constraints = [models.UniqueConstraint(fields=["book", "secret_id"], name="uniq_secret_id")]
        verbose_name = "信息差"
        verbose_name_plural = "信息差"

    def __str__(self) -> str:
        return f"{self.secret_id} {self.title}"
