from django.db import models

from core.models.book import Book


class Document(models.Model):
    """A Markdown document of the book that is read by ``##`` section: the 总纲, each 卷纲, the
    worldview, style rules, and character cards. One mechanism serves every "section of X" read."""

    class Kind(models.TextChoices):
        MASTER_OUTLINE = "master_outline", "总纲"
        VOLUME_OUTLINE = "volume_outline", "卷纲"
        WORLDVIEW = "worldview", "世界观"
        STYLE = "style", "文风"
        CHARACTER_CARD = "character_card", "角色卡"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="documents", verbose_name="书")
    kind = models.CharField(max_length=30, choices=Kind.choices, verbose_name="类型")
    key = models.CharField(max_length=200, help_text="卷纲为卷号，角色卡为正名，其余为文件名", verbose_name="键")
    title = models.CharField(max_length=300, blank=True, verbose_name="标题")
    front_matter = models.JSONField(default=dict, blank=True, verbose_name="文件头")
    body = models.TextField(blank=True, verbose_name="正文")
    source_path = models.CharField(max_length=1000, blank=True, verbose_name="源文件")

    class Meta:
        ordering = ["book", "kind", "key"]
        constraints = [models.UniqueConstraint(fields=["book", "kind", "key"], name="uniq_document_key")]
        verbose_name = "文档"
        verbose_name_plural = "文档"

    def __str__(self) -> str:
        return f"{self.get_kind_display()}：{self.key}"


class Section(models.Model):
    """A ``##`` section of a document (text before the first heading has heading '')."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="sections", verbose_name="文档")
    order = models.PositiveIntegerField(verbose_name="顺序")
    heading = models.CharField(max_length=300, blank=True, verbose_name="标题")
    level = models.PositiveSmallIntegerField(default=2, verbose_name="级别")
    body = models.TextField(blank=True, verbose_name="正文")

    class Meta:
        ordering = ["document", "order"]
        constraints = [models.UniqueConstraint(fields=["document", "order"], name="uniq_section_order")]
        indexes = [models.Index(fields=["document", "heading"], name="section_heading_idx")]
        verbose_name = "段落"
        verbose_name_plural = "段落"

    def __str__(self) -> str:
        return self.heading or "（前言）"


class TimelineRow(models.Model):
    """One row of a volume's timeline table (时间线/第N卷.md)."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="timeline_rows", verbose_name="书")
    volume = models.PositiveIntegerField(verbose_name="卷")
    order = models.PositiveIntegerField(verbose_name="行序")
    chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="章节")
    story_time = models.CharField(max_length=200, blank=True, verbose_name="书内时间")
    event = models.TextField(blank=True, verbose_name="事件")
    present = models.JSONField(default=list, blank=True, help_text="在场人物（按文件所写）", verbose_name="在场人物")
    source_path = models.CharField(max_length=1000, blank=True, verbose_name="源文件")

    class Meta:
        ordering = ["book", "volume", "order"]
        constraints = [models.UniqueConstraint(fields=["book", "volume", "order"], name="uniq_timeline_row")]
        indexes = [models.Index(fields=["book", "source_path"], name="timeline_source_idx")]
        verbose_name = "时间线条目"
        verbose_name_plural = "时间线"

    def __str__(self) -> str:
        return f"第{self.volume}卷 #{self.order} {self.event[:20]}"
