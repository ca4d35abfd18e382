"""Curator marks that change how the text is read, so the books they touch are rescanned: an alias
marked generic (a weak mention, never an appearance) or plain again. Above ``entities.mentions``."""

from collections.abc import Iterable

from django.db import transaction

from core.models import Book
from entities.mentions import matcher_invalidate, mentions_index
from entities.models import Alias


@transaction.atomic
def aliases_generic_set(*, aliases: Iterable[Alias], generic: bool) -> dict[str, int]:
    """Mark aliases generic (weak mentions) or plain, then rescan the affected books. Aliases from the
    book's files are left alone (the next sync would undo it): they are marked in 名册 / the card."""
    pks = [a.pk for a in aliases]
    rows = Alias.objects.filter(pk__in=pks)
    file_owned = rows.filter(source="file").count()
    changed_rows = rows.exclude(source="file").exclude(generic=generic)
    books = set(changed_rows.values_list("book_id", flat=True))
    changed = changed_rows.update(generic=generic)
    for book in Book.objects.filter(pk__in=books):
        matcher_invalidate(book_id=book.pk)  # .update() sends no signals
        mentions_index(book=book, numbers=None)
    return {"changed": changed, "file_owned": file_owned}
