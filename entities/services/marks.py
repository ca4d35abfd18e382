"""Curator writes that change how the text is read, so the chapters where the names they touch occur
are rescanned: an alias marked generic (a weak mention, never an appearance) or plain again, and a
merge of two entities (a name they shared is no longer ambiguous). Above ``entities.mentions``."""

from collections.abc import Iterable

from django.db import transaction
from django.db.models import Q

from core.journal import journal_append, journal_lock
from core.models import Book
from entities.mentions import matcher_invalidate, mentions_names_after, mentions_names_before
from entities.models import Alias, Appearance, Entity, Relationship
from entities.services.writes import alias_add, entity_appearance_refresh, relationship_summary_refresh
from kernel.exceptions import InvalidInput


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
    names_before = {book.pk: mentions_names_before(book=book) for book in books}
    changed = changed_rows.update(generic=generic)
    for book in books:
        matcher_invalidate(book_id=book.pk)  # .update() sends no signals
        mentions_names_after(book=book, before=names_before[book.pk])  # the chapters naming them
        if journal:
            journal_append(book=book, op="aliases.generic", aliases=by_book[book.pk], generic=generic)
    return {"changed": changed, "file_owned": file_owned}


@transaction.atomic
def entity_merge(*, source: Entity, target: Entity, journal: bool = True) -> dict[str, int]:
    """Merge ``source`` into ``target``: aliases, appearances, state changes and relationships move;
    the source's name and id become aliases of the target; the source is deleted. Journaled (``entity.merge``)."""
    if source.pk == target.pk:
        raise InvalidInput("不能把实体合并到它自己", extra={"id": source.entity_id})
    if source.book_id != target.book_id:
        raise InvalidInput("只能合并同一本书的实体", extra={"source": source.entity_id, "target": target.entity_id})
    if source.source == "file" and source.source_path:
        # its card or roster entry would bring it back with the next sync (while a rebuild replaying the
        # merge would not): the author merges it in the file (its names as the target's aliases)
        raise InvalidInput(
            f"实体 {source.entity_id} 来自 {source.source_path}，不能在此合并：请在文件中把它并入 "
            f"{target.entity_id}（删去其条目，名字写作后者的别名）",
            extra={"source": source.entity_id, "file": source.source_path},
        )
    journal_lock(book=source.book, heal=journal)
    names_before = mentions_names_before(book=source.book)
    counts = dict.fromkeys(("aliases", "appearances", "state_changes", "relationships", "relationships_dropped"), 0)
    for alias in source.aliases.all():
        if (
            alias_add(
                entity=target,
                alias=alias.alias,
                valid_from=alias.valid_from,
                valid_to=alias.valid_to,
                note=alias.note,
                source=alias.source,
            )
            is not None
        ):
            counts["aliases"] += 1
    for name in (source.canonical_name, source.entity_id):
        if name != target.canonical_name and alias_add(
            entity=target, alias=name, note=f"合并自 {source.entity_id}", source="curation"
        ):
            counts["aliases"] += 1
    for row in source.appearances.all():
        existing = Appearance.objects.filter(entity=target, chapter=row.chapter, source=row.source).first()
        if existing is None:
            row.entity = target
            row.save(update_fields=["entity"])
        else:
            existing.count += row.count
            offsets = [o for o in (existing.first_offset, row.first_offset) if o is not None]
            existing.first_offset = min(offsets) if offsets else None
            merged = dict(existing.aliases)
            for alias, n in row.aliases.items():
                merged[alias] = merged.get(alias, 0) + n
            existing.aliases = merged
            existing.save(update_fields=["count", "first_offset", "aliases"])
            row.delete()
        counts["appearances"] += 1
    counts["state_changes"] = source.state_changes.update(entity=target)
    rel_pks = set()
    moving = Relationship.objects.filter(Q(from_entity=source) | Q(to_entity=source)).order_by("pk")
    for rel in list(moving.select_related("from_entity", "to_entity")):
        new_from = target if rel.from_entity_id == source.pk else rel.from_entity
        new_to = target if rel.to_entity_id == source.pk else rel.to_entity
        if new_from.pk == new_to.pk:
            # A relationship between the two merged entities would point at itself: dropped.
            rel.delete()
            counts["relationships_dropped"] += 1
            continue
        clash = (
            Relationship.objects.filter(from_entity=new_from, to_entity=new_to, type=rel.type)
            .exclude(pk=rel.pk)
            .first()
        )
        if clash is not None:
            rel.events.update(relationship=clash)
            rel.delete()
            rel_pks.add(clash.pk)
        else:
            rel.from_entity, rel.to_entity = new_from, new_to
            rel.save(update_fields=["from_entity", "to_entity"])
            rel_pks.add(rel.pk)
        counts["relationships"] += 1
    relationship_summary_refresh(relationship_pks=rel_pks)
    if not (target.source == "file" and target.source_path):
        # A card or the roster owns these fields of a file entity: a merge never writes them (the next
        # sync would put the file's value back, while a rebuild replaying the merge would keep it).
        for key, value in source.base_state.items():
            target.base_state.setdefault(key, value)
        target.is_protagonist = target.is_protagonist or source.is_protagonist
        if not target.description:
            target.description = source.description
        target.save(update_fields=["base_state", "is_protagonist", "description"])
    source_id = source.entity_id
    source.delete()
    entity_appearance_refresh(entity_pks=[target.pk])
    # a name the two shared is no longer ambiguous: the chapters naming the merged names are rescanned
    mentions_names_after(book=target.book, before=names_before)
    if journal:
        journal_append(book=target.book, op="entity.merge", source=source_id, target=target.entity_id)
    return counts
