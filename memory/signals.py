"""Signal receivers of the memory app, connected in ``MemoryConfig.ready`` (cache invalidation only)."""

from memory.models import DerivationStamp


def stamp_forget(sender, instance, **kwargs) -> None:
    """A row the book-wide facts are derived from was saved: forget its book's derivation stamp's inputs,
    so the next derivation recomputes them (the chunks' names, which the row does not touch, are kept)."""
    owner = getattr(instance, "thread", None) or getattr(instance, "document", None) or instance
    DerivationStamp.objects.filter(book_id=owner.book_id).update(inputs="")
