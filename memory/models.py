"""Long-term memory: scratchpad facts with their history, retrieval chunks, and the memory-hit log.

Chapters are referenced by NUMBER (chapters are replaced on every rebuild); entities by their
``entity_id`` string (entities survive rebuilds, and a fact may name something that is not an entity).
"""

from django.db import models

from core.models import Book


class Fact(models.Model):
    """One scratchpad fact: ``subject``'s ``field`` is ``value`` since ``source_chapter``.

    Facts of the same (category, subject, field) form a group; the resolver (memory/resolver.py)
    decides each fact's status from the whole group, so the result does not depend on the order in
    which chapters were ingested."""

    class Category(models.TextChoices):
        STORY = "story_facts", "剧情事实"
        CHARACTER = "character_facts", "角色事实"
        WORLD_RULE = "world_rules", "世界规则"
        TIMELINE = "timeline", "时间线"
        OPEN_LOOP = "open_loops", "未决线索"
        READER_PROMISE = "reader_promises", "读者承诺"
        CONSTRAINT = "active_constraints", "当前约束"

    class Status(models.TextChoices):
        ACTIVE = "active", "有效"
        OUTDATED = "outdated", "已过时"
        CONTRADICTED = "contradicted", "矛盾待裁决"
        TENTATIVE = "tentative", "存疑"

    class Origin(models.TextChoices):
        DERIVED = "derived", "章节派生"
        SETTING = "setting", "设定派生"
        IMPORT = "import", "导入"
        MANUAL = "manual", "手工"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="memory_facts", verbose_name="书")
    key = models.CharField(
        max_length=100, help_text="稳定 id：派生事实为内容哈希，导入事实沿用插件 id", verbose_name="稳定 id"
    )
    category = models.CharField(max_length=30, choices=Category.choices, verbose_name="类别")
    subject = models.CharField(max_length=200, help_text="主体：角色正名、线索 id、设定条目…", verbose_name="主体")
    field = models.CharField(max_length=200, help_text="字段：realm、location、关系:萧薰儿…", verbose_name="字段")
    value = models.TextField(verbose_name="值")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE, verbose_name="状态")
    source_chapter = models.PositiveIntegerField(
        default=0, help_text="确立该值的章节号（0 = 设定）", verbose_name="来源章"
    )
    evidence = models.JSONField(
        default=list, blank=True, help_text='[{"kind": "chapter_summary", "chapter": 12}, …]', verbose_name="证据"
    )
    confidence = models.FloatField(default=1.0, verbose_name="置信度")
    # issue 31: what an imported item carried that a fact has no column for (the old plugin's ``payload``
    # with urgency / expected_payoff, its ``layer``), kept as written and exported back
    extra = models.JSONField(default=dict, blank=True, verbose_name="导入的其他字段")
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.MANUAL, verbose_name="出处")
    entity_ref = models.CharField(
        max_length=120, blank=True, help_text="主体为实体时的 entity_id", verbose_name="实体 id"
    )
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="supersedes",
        help_text="取代它的事实",
        verbose_name="被取代于",
    )
    revises = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="revised_by",
        help_text="显式修订的旧规则",
        verbose_name="修订的规则",
    )
    closed_chapter = models.PositiveIntegerField(
        null=True, blank=True, help_text="未决线索收尾的章节", verbose_name="收尾章"
    )
    decided_at = models.DateTimeField(
        null=True, blank=True, help_text="矛盾裁决时采纳此值的时间", verbose_name="裁决时间"
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name="创建时间")
    updated_at = models.DateTimeField(auto_now=True, verbose_name="更新时间")

    class Meta:
        ordering = ["book", "category", "subject", "field", "source_chapter", "key"]
        constraints = [models.UniqueConstraint(fields=["book", "key"], name="uniq_memory_fact_key")]
        indexes = [
            models.Index(fields=["book", "category", "subject", "field"], name="memory_fact_group_idx"),
            models.Index(fields=["book", "status", "category"], name="memory_fact_status_idx"),
            models.Index(fields=["book", "source_chapter"], name="memory_fact_chapter_idx"),
            models.Index(fields=["book", "origin", "updated_at"], name="memory_fact_origin_idx"),
        ]
        verbose_name = "记忆事实"
        verbose_name_plural = "记忆事实"

    def __str__(self) -> str:
        return f"{self.subject}.{self.field} = {self.value[:30]}（第{self.source_chapter}章）"


# What each history action is called where a curator reads it (admin, the event's own caption).
EVENT_LABELS = {
    "created": "创建",
    "evidence": "新增证据",
    "status": "状态变化",
    "revised": "修订",
    "decided": "裁决",
    "closed": "收尾",
    "reopened": "重新开启",
    "author_closed": "作者收尾",
    "imported": "导入",
    "merged": "合并",
}


class FactEvent(models.Model):
    """One entry of a fact's history: created, status changed, evidence added, decided, revised…"""

    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="events", verbose_name="事实")
    at = models.DateTimeField(auto_now_add=True, verbose_name="时间")
    action = models.CharField(max_length=30, verbose_name="动作")
    old_status = models.CharField(max_length=20, blank=True, verbose_name="原状态")
    new_status = models.CharField(max_length=20, blank=True, verbose_name="新状态")
    chapter = models.PositiveIntegerField(null=True, blank=True, verbose_name="章节")
    note = models.TextField(blank=True, verbose_name="备注")

    class Meta:
        ordering = ["fact", "id"]
        verbose_name = "事实履历"
        verbose_name_plural = "事实履历"

    def __str__(self) -> str:
        statuses = dict(Fact.Status.choices)
        action = EVENT_LABELS.get(self.action, self.action)
        return f"{action} {statuses.get(self.old_status, self.old_status) or '—'}→{statuses.get(self.new_status, self.new_status) or '—'}"


class FactTombstone(models.Model):
    """The key of a derived fact that compaction merged or dropped: deriving the same chapter again
    does not bring it back (so compaction is not undone by the next rebuild)."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="memory_tombstones", verbose_name="书")
    key = models.CharField(max_length=100, verbose_name="键")
    reason = models.CharField(max_length=20, verbose_name="原因")
    at = models.DateTimeField(auto_now_add=True, verbose_name="时间")

    class Meta:
        ordering = ["book", "key"]
        constraints = [models.UniqueConstraint(fields=["book", "key"], name="uniq_memory_tombstone")]
        verbose_name = "已压缩事实"
        verbose_name_plural = "已压缩事实"

    def __str__(self) -> str:
        return f"{self.key}（{self.reason}）"


class Chunk(models.Model):
    """A retrievable piece of a chapter (its summary or one scene) with its tokens for BM25."""

    class Kind(models.TextChoices):
        SUMMARY = "summary", "摘要"
        SCENE = "scene", "场景"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="memory_chunks", verbose_name="书")
    chapter = models.PositiveIntegerField(verbose_name="章节")
    kind = models.CharField(max_length=10, choices=Kind.choices, verbose_name="类型")
    order = models.PositiveIntegerField(default=0, verbose_name="序号")
    text = models.TextField(verbose_name="内容")
    terms = models.TextField(
        blank=True, help_text="检索用词项，空格分隔（中文二元组 + 实体名）", verbose_name="检索词项"
    )
    source_hash = models.CharField(
        max_length=40, blank=True, help_text="生成片段时章节文件与实体名的指纹", verbose_name="来源指纹"
    )

    class Meta:
        ordering = ["book", "chapter", "kind", "order"]
        constraints = [
            models.UniqueConstraint(fields=["book", "chapter", "kind", "order"], name="uniq_memory_chunk"),
        ]
        verbose_name = "检索片段"
        verbose_name_plural = "检索片段"

    def __str__(self) -> str:
        return f"第{self.chapter}章 {self.kind}#{self.order}"


class MemoryHit(models.Model):
    """The memory-hit log: which facts and chunks went into the last pack built for a chapter and task.

    One row per (book, chapter, task), replaced on every logged build, so the log stays bounded."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="memory_hits", verbose_name="书")
    chapter = models.PositiveIntegerField(verbose_name="章节")
    task = models.CharField(max_length=10, verbose_name="任务")
    budget_tokens = models.PositiveIntegerField(verbose_name="预算 token")
    used_tokens = models.PositiveIntegerField(verbose_name="已用 token")
    mode = models.CharField(max_length=10, default="full", verbose_name="模式")
    retrieval = models.CharField(max_length=100, blank=True, verbose_name="检索方式")
    facts = models.ManyToManyField(Fact, blank=True, related_name="hits", verbose_name="收录事实")
    items = models.JSONField(default=list, blank=True, help_text="收录的条目 id（按顺序）", verbose_name="条目")
    skipped = models.PositiveIntegerField(default=0, verbose_name="略去条数")
    built_at = models.DateTimeField(auto_now=True, verbose_name="构建时间")

    class Meta:
        ordering = ["book", "-chapter", "task"]
        constraints = [models.UniqueConstraint(fields=["book", "chapter", "task"], name="uniq_memory_hit")]
        verbose_name = "记忆命中"
        verbose_name_plural = "记忆命中日志"

    def __str__(self) -> str:
        return f"第{self.chapter}章 {self.task}（{self.used_tokens}/{self.budget_tokens}）"


class DerivationStamp(models.Model):
    """What a book's book-wide facts were last derived from: a digest of their inputs (the hashes of
    the book's non-chapter files, the chapters' ``closes``, the entities' initial states) and the state
    of its setting facts right after. While both are unchanged, deriving them again would change
    nothing, so it is skipped (a finalize would otherwise read every thread, secret and entity).
    Saving a thread, secret or document row by hand (the admin) clears ``inputs``. ``names``: the
    names the retrieval chunks were indexed with (memory/retrieval.py, ``chunks_index``)."""

    book = models.OneToOneField(Book, on_delete=models.CASCADE, related_name="memory_stamp", verbose_name="书")
    inputs = models.CharField(max_length=64, verbose_name="输入指纹")
    facts = models.CharField(
        max_length=100, help_text="设定事实的 数量:最大id:最后修改时间", verbose_name="设定事实指纹"
    )
    # issue 24: the names (two characters or more) the retrieval chunks' ``@name`` terms were made with;
    # when the book's names move, only the chunks whose text holds an added or removed name are remade
    names = models.JSONField(
        null=True, blank=True, default=None, help_text="检索块词项所用的名字（两字以上）", verbose_name="检索名字"
    )

    class Meta:
        verbose_name = "派生指纹"
        verbose_name_plural = "派生指纹"

    def __str__(self) -> str:
        return f"{self.book_id}: {self.inputs[:12]}"
