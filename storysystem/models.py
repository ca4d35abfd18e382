"""The reference library (libraries → tables → entries) and the per-book story settings.

A *library* is one imported folder of CSVs (the shipped ``seed``, or e.g. ``refcsv``); a *table* is one
CSV of it; an *entry* is one row. The shared contract columns are real fields (searchable, filterable,
editable in the admin); every other column lives in ``extra`` keyed by header, and ``raw`` keeps the
row exactly as read, so an export reproduces the file cell for cell.
"""

import uuid

from django.db import models

from core.models import Book


class ReferenceLibrary(models.Model):
    """One imported folder of CSV tables. Disabled libraries are kept but neither searched nor routed."""

    name = models.CharField(max_length=100, unique=True, verbose_name="库名")
    enabled = models.BooleanField(default=True, help_text="停用后不参与检索与路由", verbose_name="启用")
    source_dir = models.CharField(max_length=1000, blank=True, help_text="最近一次导入的目录", verbose_name="来源目录")
    imported_at = models.DateTimeField(null=True, blank=True, verbose_name="导入时间")

    class Meta:
        ordering = ["name"]
        verbose_name = "参考资料库"
        verbose_name_plural = "参考资料库"

    def __str__(self) -> str:
        return self.name


class ReferenceTable(models.Model):
    """One CSV file of a library: its header (column order), key column and file dialect."""

    library = models.ForeignKey(
        ReferenceLibrary, on_delete=models.CASCADE, related_name="tables", verbose_name="资料库"
    )
    name = models.CharField(max_length=200, help_text="表名（CSV 文件名去掉 .csv）", verbose_name="表名")
    columns = models.JSONField(default=list, help_text="表头，按文件顺序", verbose_name="列")
    key_column = models.CharField(max_length=100, default="编号", verbose_name="键列")
    has_bom = models.BooleanField(default=False, verbose_name="含 BOM")
    line_terminator = models.CharField(max_length=4, default="\n", verbose_name="换行符")

    class Meta:
        ordering = ["library", "name"]
        constraints = [models.UniqueConstraint(fields=["library", "name"], name="uniq_reference_table")]
        verbose_name = "参考表"
        verbose_name_plural = "参考表"

    def __str__(self) -> str:
        return f"{self.library.name}/{self.name}"

    @property
    def is_contract(self) -> bool:
        """A table with the shared contract columns (genre-index style taxonomies are not)."""
        return self.key_column == "编号"


class ReferenceEntry(models.Model):
    """One row of a reference table: the contract columns as fields, the rest in ``extra``."""

    table = models.ForeignKey(ReferenceTable, on_delete=models.CASCADE, related_name="entries", verbose_name="表")
    code = models.CharField(max_length=100, help_text="编号（无编号列的表取第一列）", verbose_name="编号")
    position = models.PositiveIntegerField(default=0, help_text="在文件中的行序", verbose_name="行序")
    skills = models.TextField(blank=True, verbose_name="适用技能")
    category = models.TextField(blank=True, verbose_name="分类")
    level = models.TextField(blank=True, verbose_name="层级")
    keywords = models.TextField(blank=True, verbose_name="关键词")
    intents = models.TextField(blank=True, verbose_name="意图与同义词")
    genres = models.TextField(blank=True, verbose_name="适用题材")
    instruction = models.TextField(blank=True, verbose_name="大模型指令")
    summary = models.TextField(blank=True, verbose_name="核心摘要")
    detail = models.TextField(blank=True, verbose_name="详细展开")
    extra = models.JSONField(default=dict, blank=True, help_text="本表特有列，按表头为键", verbose_name="其他列")
    raw = models.JSONField(default=list, blank=True, help_text="原始行（按表头顺序的单元格）", verbose_name="原始行")
    updated_at = models.DateTimeField(auto_now=True, verbose_name="更新时间")

    class Meta:
        ordering = ["table", "position", "code"]
        constraints = [models.UniqueConstraint(fields=["table", "code"], name="uniq_reference_entry_code")]
        indexes = [models.Index(fields=["code"], name="reference_entry_code_idx")]
        verbose_name = "参考条目"
        verbose_name_plural = "参考条目"

    def __str__(self) -> str:
        return f"{self.code} {self.summary[:30]}"


class LibraryState(models.Model):
    """A single row whose token changes on every library write: the in-process search index is
    keyed by it. A random token (not a counter) stays correct when a test transaction rolls back."""

    token = models.CharField(max_length=32, default="", verbose_name="版本令牌")

    class Meta:
        verbose_name = "资料库版本"
        verbose_name_plural = "资料库版本"

    def __str__(self) -> str:
        return self.token

    @staticmethod
    def new_token() -> str:
        return uuid.uuid4().hex


class StorySetting(models.Model):
    """A book's master setting (chapter is null) or one chapter's override record."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="story_settings", verbose_name="书")
    chapter = models.PositiveIntegerField(null=True, blank=True, help_text="留空表示全书总设定", verbose_name="章节")
    query = models.CharField(max_length=500, blank=True, verbose_name="查询")
    explicit_genre = models.CharField(max_length=100, blank=True, verbose_name="指定题材")
    overrides = models.JSONField(default=dict, blank=True, help_text="作者显式设定的字段", verbose_name="显式设定")
    added_anti_patterns = models.JSONField(
        default=list, blank=True, help_text="作者追加的毒点", verbose_name="追加的毒点"
    )
    data = models.JSONField(default=dict, blank=True, help_text="StorySystemDict（JSON 为准）", verbose_name="设定数据")
    created_at = models.DateTimeField(auto_now_add=True, verbose_name="创建时间")
    updated_at = models.DateTimeField(auto_now=True, verbose_name="更新时间")

    class Meta:
        ordering = ["book", "chapter"]
        constraints = [
            models.UniqueConstraint(fields=["book", "chapter"], name="uniq_story_setting_chapter"),
            models.UniqueConstraint(
                fields=["book"], condition=models.Q(chapter__isnull=True), name="uniq_story_setting_master"
            ),
        ]
        verbose_name = "故事设定"
        verbose_name_plural = "故事设定"

    def __str__(self) -> str:
        return f"{self.book.slug} {'总设定' if self.chapter is None else f'第{self.chapter}章'}"
