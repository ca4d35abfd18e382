"""Reads of entities: alias resolution first (every other app resolves names through it)."""

from django.db.models import Q, QuerySet

from entities.models import Alias, Entity
from webnovel.exceptions import Ambiguous, NotFound
from webnovel.models import Book


def _alias_matches(*, book: Book, alias: str, type: str | None, chapter: int | None) -> QuerySet[Entity]:
    rows = Alias.objects.filter(book=book, alias=alias)
    if type:
        rows = rows.filter(entity__type=type)
    if chapter is not None:
        rows = rows.filter(Q(valid_from__isnull=True) | Q(valid_from__lte=chapter))
        rows = rows.filter(Q(valid_to__isnull=True) | Q(valid_to__gte=chapter))
    by_name = Entity.objects.filter(book=book, canonical_name=alias)
    if type:
        by_name = by_name.filter(type=type)
    ids = set(rows.values_list("entity_id", flat=True)) | set(by_name.values_list("id", flat=True))
    return Entity.objects.filter(id__in=ids).order_by("type", "entity_id")


def alias_resolve(*, book: Book, alias: str, type: str | None = None, chapter: int | None = None) -> Entity:
    """The one entity named ``alias`` (canonical name or alias, optionally of ``type`` and valid at
    ``chapter``). Several → Ambiguous listing the candidates; none → NotFound."""
    candidates = list(_alias_matches(book=book, alias=alias, type=type, chapter=chapter))
    if not candidates:
        raise NotFound(f"别名 '{alias}' 没有对应的实体", extra={"alias": alias, "type": type})
    if len(candidates) > 1:
        raise Ambiguous(
            f"别名歧义: '{alias}' 命中 {len(candidates)} 个实体，请改用 id 或补充 type 属性",
            extra={
                "alias": alias,
                "candidates": [
                    {"id": e.entity_id, "type": e.type, "canonical_name": e.canonical_name} for e in candidates
                ],
            },
        )
    return candidates[0]


def entity_get(*, book: Book, ref: str, type: str | None = None) -> Entity:
    """An entity by id, falling back to alias resolution."""
    entity = Entity.objects.filter(book=book, entity_id=ref).first()
    if entity is not None:
        return entity
    return alias_resolve(book=book, alias=ref, type=type)
