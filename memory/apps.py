from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "长期记忆"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from core.models import Document, Section
        from kernel.indexing import after_chapter_hook_register
        from kernel.journal_ops import journal_ops_register
        from memory.signals import stamp_forget
        from threads.models import Secret, Thread, ThreadHistoryEntry

        # A row the book-wide facts are derived from, saved one at a time (the admin; the rebuilder
        # writes in bulk and records file hashes instead): forget the derivation stamp of its book.
        for model in (Thread, ThreadHistoryEntry, Secret, Document, Section):
            post_save.connect(stamp_forget, sender=model, dispatch_uid=f"memory_stamp_{model.__name__}")
        after_chapter_hook_register("memory.pipeline.memory_after_chapter")  # facts, chunks, compaction
        # after memory's own: the vectors of the facts it derived (only new or revised texts are embedded)
        after_chapter_hook_register("memory.fact_recall.facts_after_chapter")
        journal_ops_register("memory.journal_ops")  # the fact writes and their replayers, imported on first replay
