from django.db import models

from core.models.book import Book


class JournalApplied(models.Model):
    """One event of the book folder's journal (``.journal/log.jsonl``) whose rows are in the database.

    Written in the transaction that writes those rows, so an event in the file without a row here is
    one whose transaction never committed (a crash between the file and the commit): the next rebuild
    or sync applies it, and one with a row is never applied twice."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="journal_applied", verbose_name="书")
    seq = models.PositiveIntegerField(verbose_name="序号")
    # the event's attachment (an extraction's payload) as it was when applied: a sync that finds the
    # file changed (an author's hand edit) applies it again (bookfiles/rebuilder/journal_replay.py)
    attachment_hash = models.CharField(max_length=64, blank=True, verbose_name="附件哈希")
    attachment_size = models.PositiveBigIntegerField(null=True, blank=True, verbose_name="附件大小")
    attachment_mtime_ns = models.BigIntegerField(null=True, blank=True, verbose_name="附件修改时间")

    class Meta:
        verbose_name = "已应用的日志事件"
        verbose_name_plural = verbose_name
        constraints = [models.UniqueConstraint(fields=["book", "seq"], name="uniq_journal_applied")]

    def __str__(self) -> str:
        return f"{self.book_id}#{self.seq}"


class FollowUp(models.Model):
    """An after-commit re-derivation (``kernel.indexing.after_chapter_hooks_schedule``: memory facts,
    chunks) written in the transaction of the write it follows and deleted once its hooks have run.

    A row left over is a follow-up that never completed (the writer was killed after its commit, or a
    hook failed): the next sync, or the next writer's journal heal, runs it (``core.followups``), so
    derived state never stays behind the rows it is derived from."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="follow_ups", verbose_name="书")
    numbers = models.JSONField(null=True, blank=True, verbose_name="章节")  # None: every chapter
    removed = models.JSONField(default=list, blank=True, verbose_name="删除的章节")
    entities = models.JSONField(default=list, blank=True, verbose_name="实体")

    class Meta:
        verbose_name = "待补的派生更新"
        verbose_name_plural = verbose_name

    def __str__(self) -> str:
        return f"{self.book_id}:{self.numbers}"
