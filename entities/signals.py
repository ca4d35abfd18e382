"""Signal receivers of the entities app, connected in ``EntitiesConfig.ready()``. Signals only
invalidate the cached alias automaton, never drive domain flow."""

from entities.mentions import matcher_invalidate


def alias_names_changed(sender, instance, **kwargs) -> None:
    """An Entity or Alias was saved or deleted: its book's cached automaton is stale."""
    matcher_invalidate(book_id=instance.book_id)
