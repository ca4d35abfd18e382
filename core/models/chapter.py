from django.db import models

from core.models.book import Book


class Chapter(models.Model):
    """A finalized chapter (定稿/正文/第NNNN章.md): front matter fields plus the full body."""

    class Position(models.TextChoices):
        ADVANCE = "推进", "推进"
        TRANSITION = "过渡", "过渡"
        DAILY = "日常", "日常"

    class Mood(models.TextChoices):
        OPPRESSED = "压抑", "压抑"
        BUILDUP = "铺垫", "铺垫"
        SMALL_PAYOFF = "小爽", "小爽"
        BIG_PAYOFF = "大爽", "大爽"
        TURN = "转折", "转折"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="chapters", verbose_name="书")
    number = models.PositiveIntegerField(verbose_name="章号")
    volume = models.PositiveIntegerField(null=True, blank=True, verbose_name="卷")
    title = models.CharField(max_length=300, blank=True, verbose_name="标题")
    perspective = models.CharField(max_length=100, blank=True, help_text="视角人物", verbose_name="视角")
    story_time = models.CharField(max_length=200, blank=True, help_text="书内时间", verbose_name="书内时间")
    chapter_position = models.CharField(max_length=10, blank=True, choices=Position.choices, verbose_name="章节定位")
    hook_type = models.CharField(max_length=50, blank=True, help_text="如 危机钩-强", verbose_name="钩子")
    mood_position = models.CharField(max_length=10, blank=True, choices=Mood.choices, verbose_name="情绪位置")
    summary = models.TextField(blank=True, verbose_name="摘要")
    key_chapter = models.BooleanField(default=False, verbose_name="关键章")
    opens = models.JSONField(default=list, blank=True, help_text="本章开启的线索 id", verbose_name="开启的线索")
    advances = models.JSONField(default=list, blank=True, help_text="本章推进的线索 id", verbose_name="推进的线索")
    closes = models.JSONField(default=list, blank=True, help_text="本章收尾的线索 id", verbose_name="收尾的线索")
    front_matter = models.JSONField(default=dict, blank=True, verbose_name="文件头")
    body = models.TextField(blank=True, help_text="正文（已去除手工实体标签）", verbose_name="正文")
    entity_tags = models.JSONField(
        default=list,
        blank=True,
        help_text='正文中的手工实体标签 [{"line": 行号, "text": 原文}]，定稿时应用',
        verbose_name="实体标签",
    )
    word_count = models.PositiveIntegerField(default=0, help_text="正文字符数（不含空白）", verbose_name="字数")
    source_path = models.CharField(max_length=1000, blank=True, verbose_name="源文件")
    content_hash = models.CharField(max_length=64, blank=True, verbose_name="内容哈希")

    class Meta:
        ordering = ["book", "number"]
        constraints = [models.UniqueConstraint(fields=["book", "number"], name="uniq_chapter_number")]
        indexes = [
            models.Index(fields=["book", "volume", "number"], name="chapter_volume_idx"),
            # finalize / sync replace a chapter by the file it came from
            models.Index(fields=["book", "source_path"], name="chapter_source_idx"),
            # book stats sum the word counts from the index, never reading past the bodies
            models.Index(fields=["book", "number", "word_count"], name="chapter_words_idx"),
            # semantic recall checks every search whether a chapter changed: the hashes from the index
            models.Index(fields=["book", "number", "content_hash"], name="chapter_hash_idx"),
            # the memory hook's inputs digest reads which chapters close threads after every finalize:
            # from the index, never reading the rows (their bodies) of a 3,000-chapter book
            models.Index(fields=["book", "number", "closes"], name="chapter_closes_idx"),
        ]
        verbose_name = "章节"
        verbose_name_plural = "章节"

    def __str__(self) -> str:
        return f"第{self.number}章 {self.title}"


class Fingerprint(models.Model):
    """Style fingerprint of a chapter range. Identity is (book, start, end) — never a timestamp —
    so two rebuilds produce the same rows. ``features`` holds raw counts (characters, sentences,
    dialogue characters, …) so that ranges aggregate exactly by summing."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="fingerprints", verbose_name="书")
    start_chapter = models.PositiveIntegerField(verbose_name="起始章")
    end_chapter = models.PositiveIntegerField(verbose_name="结束章")
    features = models.JSONField(default=dict, verbose_name="特征")
    # Within book.yaml's style_baseline range: set where the rows are written (a changed book.yaml
    # rebuilds the whole book, so the flag never outlives the range it was set from).
    is_baseline = models.BooleanField(
        default=False, help_text="是否在 book.yaml 的文风基线范围内", verbose_name="文风基线"
    )

    class Meta:
        ordering = ["book", "start_chapter", "end_chapter"]
        constraints = [
            models.UniqueConstraint(fields=["book", "start_chapter", "end_chapter"], name="uniq_fingerprint_range")
        ]
        verbose_name = "文风指纹"
        verbose_name_plural = "文风指纹"

    def __str__(self) -> str:
        return f"{self.start_chapter}-{self.end_chapter}"
