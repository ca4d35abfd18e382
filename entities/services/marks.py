"""Curator marks that change how the text is read, so the books they touch are rescanned: an alias
marked generic (a weak mention, never an appearance) or plain again. Above ``entities.mentions``."""

from collections.abc import Iterable

from django.db import transaction

from core.journal import journal_append, journal_lock
from core.models import Book
from entities.mentions import matcher_invalidate, mentions_index
from entities.models import Alias


@transaction.atomic
def aliases_generic_set(*, aliases: Iterable[Alias], generic: bool, journal: bool = True) -> dict[str, int]:
    """Mark aliases generic (weak mentions) or plain, then rescan the affected books. Aliases from the
    book's files are left alone (the next sync would undo it): they are marked in 名册 / the card.
    Journaled per book (``aliases.generic``: [entity id, alias] pairs)."""
    pks = [a.pk for a in aliases]
    rows = Alias.objects.filter(pk__in=pks)
    file_owned = rows.filter(source="file").count()
    changed_rows = rows.exclude(source="file").exclude(generic=generic)
    by_book: dict[int, list[list[str]]] = {}
    for book_id, entity_id, alias in changed_rows.order_by("book_id", "entity__entity_id", "alias").values_list(
        "book_id", "entity__entity_id", "alias"
    ):
        by_book.setdefault(book_id, []).append([entity_id, alias])
    books = list(Book.objects.filter(pk__in=by_book))
    for book in books:
        journal_lock(book=book, heal=journal)
    changed = changed_rows.update(generic=generic)
    for book in books:
        matcher_invalidate(book_id=book.pk)  # .update() sends no signals
        mentions_index(book=book, numbers=None)
        if journal:
            journal_append(book=book, op="aliases.generic", aliases=by_book[book.pk], generic=generic)
    return {"changed": changed, "file_owned": file_owned}
