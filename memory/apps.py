from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "长期记忆"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from core.models import Document, Section
        from threads.models import Secret, Thread, ThreadHistoryEntry

        # A row the book-wide facts are derived from, saved one at a time (the admin; the rebuilder
        # writes in bulk and records file hashes instead): forget the derivation stamp of its book.
        for model in (Thread, ThreadHistoryEntry, Secret, Document, Section):
            post_save.connect(_stamp_forget, sender=model, dispatch_uid=f"memory_stamp_{model.__name__}")


def _stamp_forget(sender, instance, **kwargs) -> None:
    from memory.models import DerivationStamp

    owner = getattr(instance, "thread", None) or getattr(instance, "document", None) or instance
    DerivationStamp.objects.filter(book_id=owner.book_id).delete()
