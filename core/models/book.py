from django.db import models

# Thread types and their default "overdue after N chapters" thresholds; book.yaml overrides them.
DEFAULT_THRESHOLDS = {
    "伏笔": 30,
    "悬念": 10,
    "感情线": 20,
    "secret_accumulation": 50,
    "weak_hook_streak": 3,
}


class Book(models.Model):
    """One book folder. The slug comes from book.yaml (``slug:``) or else the folder name."""

    slug = models.SlugField(max_length=100, unique=True, allow_unicode=True, verbose_name="标识")
    title = models.CharField(max_length=200, blank=True, verbose_name="标题")
    genre = models.CharField(max_length=100, blank=True, verbose_name="题材")
    root = models.CharField(max_length=1000, help_text="书籍文件夹的绝对路径", verbose_name="文件夹")
    config = models.JSONField(default=dict, blank=True, help_text="book.yaml 的完整内容", verbose_name="配置")
    thresholds = models.JSONField(default=dict, blank=True, help_text="合并默认值后的阈值", verbose_name="阈值")
    style_baseline_start = models.PositiveIntegerField(null=True, blank=True, verbose_name="文风基线起章")
    style_baseline_end = models.PositiveIntegerField(null=True, blank=True, verbose_name="文风基线止章")
    built_at = models.DateTimeField(null=True, blank=True, verbose_name="构建时间")
    build_report = models.JSONField(default=dict, blank=True, verbose_name="构建报告")
    created_at = models.DateTimeField(auto_now_add=True, verbose_name="创建时间")
    # The random id the book's journal names in its first line (core/journal.py): a log copied in from
    # another book (a folder copied with its .journal/) names another id or slug and is refused.
    journal_id = models.CharField(max_length=32, blank=True, default="", verbose_name="日志标识")

    class Meta:
        ordering = ["slug"]
        verbose_name = "书"
        verbose_name_plural = "书"

    def __str__(self) -> str:
        return f"{self.title or self.slug} ({self.slug})"

    def threshold(self, key: str) -> int:
        return int(self.thresholds.get(key, DEFAULT_THRESHOLDS.get(key, 0)))


class Volume(models.Model):
    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="volumes", verbose_name="书")
    number = models.PositiveIntegerField(verbose_name="卷号")
    name = models.CharField(max_length=200, blank=True, verbose_name="卷名")
    start_chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="起始章")
    end_chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="结束章")

    class Meta:
        ordering = ["book", "number"]
        constraints = [models.UniqueConstraint(fields=["book", "number"], name="uniq_volume_number")]
        verbose_name = "卷"
        verbose_name_plural = "卷"

    def __str__(self) -> str:
        return f"第{self.number}卷 {self.name}"


class SourceFile(models.Model):
    """Every file of the book that was indexed, with its content hash: what `sync` compares against."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="source_files", verbose_name="书")
    path = models.CharField(max_length=1000, help_text="相对书籍根目录的路径（/ 分隔）", verbose_name="路径")
    kind = models.CharField(max_length=40, verbose_name="类型")
    content_hash = models.CharField(max_length=64, verbose_name="内容哈希")
    size = models.PositiveBigIntegerField(default=0, verbose_name="大小（字节）")
    mtime_ns = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="读取时的修改时间（纳秒）：定稿时大小与时间都未变的文件不再重算哈希",
        verbose_name="修改时间",
    )

    class Meta:
        ordering = ["book", "path"]
        constraints = [models.UniqueConstraint(fields=["book", "path"], name="uniq_source_path")]
        indexes = [models.Index(fields=["book", "kind"], name="source_kind_idx")]
        verbose_name = "源文件"
        verbose_name_plural = "源文件"

    def __str__(self) -> str:
        return self.path
