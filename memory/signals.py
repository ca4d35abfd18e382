"""Signal receivers of the memory app, connected in ``MemoryConfig.ready`` (cache invalidation only)."""

from memory.models import DerivationStamp


def stamp_forget(sender, instance, **kwargs) -> None:
    """A row the book-wide facts are derived from was saved: forget its book's derivation stamp, so the
    next derivation recomputes them."""
    owner = getattr(instance, "thread", None) or getattr(instance, "document", None) or instance
    DerivationStamp.objects.filter(book_id=owner.book_id).delete()
