from django.db import models

from core.models import Book


class Thread(models.Model):
    """A 伏笔 / 悬念 / 感情线 (线索/<id>*.md). The type is the id's prefix."""

    class Type(models.TextChoices):
        FORESHADOWING = "伏笔", "伏笔"
        SUSPENSE = "悬念", "悬念"
        ROMANCE = "感情线", "感情线"

    class Strength(models.TextChoices):
        HIGH = "高", "高"
        MEDIUM = "中", "中"
        LOW = "低", "低"

    class Status(models.TextChoices):
        OPEN = "进行", "进行"
        CLOSED = "已收尾", "已收尾"
        ABANDONED = "已放弃", "已放弃"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="threads", verbose_name="书")
    thread_id = models.CharField(max_length=50, help_text="如 伏笔-031", verbose_name="线索 id")
    type = models.CharField(max_length=10, choices=Type.choices, verbose_name="类型")
    title = models.CharField(max_length=200, blank=True, verbose_name="标题")
    strength = models.CharField(max_length=2, choices=Strength.choices, default=Strength.MEDIUM, verbose_name="强度")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, verbose_name="状态")
    opened_chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="开启章")
    planned_end = models.PositiveIntegerField(
        null=True, blank=True, help_text="计划收尾章（写作章号时）", verbose_name="计划收尾章"
    )
    planned_end_volume = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="计划收尾卷（写作「第N卷」时；该卷最后一章在查询时由 book.yaml 得出）",
        verbose_name="计划收尾卷",
    )
    closed_chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="收尾章")
    description = models.TextField(blank=True, verbose_name="描述")
    closing_plan = models.TextField(blank=True, verbose_name="收尾计划")
    front_matter = models.JSONField(default=dict, blank=True, verbose_name="文件头")
    source_path = models.CharField(max_length=1000, blank=True, verbose_name="源文件")

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

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="history", verbose_name="线索")
    order = models.PositiveIntegerField(verbose_name="顺序")
    chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="章节")
    text = models.TextField(verbose_name="内容")

    class Meta:
        ordering = ["thread", "order"]
        constraints = [models.UniqueConstraint(fields=["thread", "order"], name="uniq_thread_history_order")]
        verbose_name = "线索履历"
        verbose_name_plural = "线索履历"

    def __str__(self) -> str:
        return f"第{self.chapter}章：{self.text[:30]}"


class Secret(models.Model):
    """An 信息差 (信息差/<id>*.md): who knows it, whether the reader knows, and its keywords."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="secrets", verbose_name="书")
    secret_id = models.CharField(max_length=50, help_text="如 信息差-021", verbose_name="信息差 id")
    title = models.CharField(max_length=200, blank=True, verbose_name="标题")
    known_to = models.JSONField(
        default=list, blank=True, help_text='[{"name": "萧炎", "since": 12}]', verbose_name="知情者"
    )
    reader_knows = models.BooleanField(default=False, verbose_name="读者已知")
    reader_told_chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="告知读者章")
    registered_chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="登记章")
    keywords = models.JSONField(default=list, blank=True, verbose_name="关键词")
    content = models.TextField(blank=True, verbose_name="内容")
    front_matter = models.JSONField(default=dict, blank=True, verbose_name="文件头")
    source_path = models.CharField(max_length=1000, blank=True, verbose_name="源文件")

    class Meta:
        ordering = ["book", "secret_id"]
        constraints = [models.UniqueConstraint(fields=["book", "secret_id"], name="uniq_secret_id")]
        verbose_name = "信息差"
        verbose_name_plural = "信息差"

    def __str__(self) -> str:
        return f"{self.secret_id} {self.title}"
