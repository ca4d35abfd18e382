"""Place and faction hierarchies (省 > 市 > 区, 总部 > 分部): each 地点 / 势力 may lie within one parent
of its own type (``Entity.parent``), and the reads walk the chain either way.

Who owns a parent: the author's file for a file entity (``parent:`` in 设定/名册.yaml or a card), written by
``parents_write`` at the end of ``roster_write``, resolved against the file entities only — so a rebuild
into an empty database (files first, then the journal) and a sync of a live one give the same parent; an
extraction's ``parent`` for an entity it created (``parent_set_from_extraction``), replayed from the
journal like the rest of the extraction. A parent that names nothing, names an entity of another type,
or closes a cycle is not written, and says so (a roster warning, an ingestion warning).
"""

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from core.models import Book
from entities.models import Alias, Entity
from entities.selectors import entity_get
from kernel.bulk import rows_update
from kernel.exceptions import InvalidInput

HIERARCHY_TYPES = ("地点", "势力")
DEPTH_MAX = 64  # a chain longer than this is a data error: the walk stops rather than loop


class HierarchyIssue(NamedTuple):
    code: str
    file: str
    line: int | None
    message: str


class _Declared(Protocol):
    type: str
    name: str
    path: str
    line: int | None
    parent: str


def _name_index(*, entities: list[tuple[int, str, str, str]], aliases: list[tuple[int, str]]) -> dict:
    """(type, name) → pks naming it, for canonical names and ids first, non-generic aliases after."""
    index: dict[tuple[str, str], list[int]] = {}
    kinds = {pk: type_ for pk, type_, _name, _eid in entities}
    for pk, type_, name, eid in entities:
        for key in {(type_, name), (type_, eid)}:
            index.setdefault(key, []).append(pk)
    for pk, alias in aliases:
        if pk in kinds and (kinds[pk], alias) not in index:
            index.setdefault(("alias", kinds[pk], alias), []).append(pk)
    return index


def _lookup(index: dict, type_: str, ref: str) -> list[int]:
    return index.get((type_, ref)) or index.get(("alias", type_, ref)) or []


def _cycles_break(parents: dict[int, int]) -> list[list[int]]:
    """Remove from ``parents`` every node on a cycle; returns the cycles found (each in walk order)."""
    cycles, done = [], set()
    for start in list(parents):
        path, seen = [], {}
        node = start
        while node in parents and node not in done and node not in seen:
            seen[node] = len(path)
            path.append(node)
            node = parents[node]
        if node in seen:
            cycles.append(path[seen[node] :])
        done.update(path)
    for cycle in cycles:
        for node in cycle:
            parents.pop(node, None)
    return cycles


def parents_write(*, book: Book, written: Sequence[tuple[str, _Declared]]) -> list[HierarchyIssue]:
    """Set the parent of every file entity from its entry's ``parent:`` (``written``: (entity id, entry)
    of the entries the roster wrote); an entity whose entry has none loses the parent it had."""
    rows = list(
        Entity.objects.filter(book=book, source="file")
        .order_by()
        .values_list("pk", "type", "canonical_name", "entity_id")
    )
    pks = {eid: pk for pk, _t, _n, eid in rows}
    names = {pk: name for pk, _t, name, _e in rows}
    aliases = list(
        Alias.objects.filter(book=book, source="file", generic=False, entity_id__in=list(names))
        .order_by()
        .values_list("entity_id", "alias")
    )
    index = _name_index(entities=rows, aliases=aliases)
    issues: list[HierarchyIssue] = []
    parents: dict[int, int] = {}
    where: dict[int, _Declared] = {}
    for entity_id, entry in written:
        ref = getattr(entry, "parent", "")  # an entry object of before the hierarchy has none
        if not ref or entity_id not in pks:
            continue
        pk = pks[entity_id]
        where[pk] = entry
        if entry.type not in HIERARCHY_TYPES:
            issues.append(
                HierarchyIssue(
                    "invalid_parent",
                    entry.path,
                    entry.line,
                    f"{entry.name} 是{entry.type}：只有地点、势力可以有 parent",
                )
            )
            continue
        found = _lookup(index, entry.type, ref)
        if len(found) != 1 or found[0] == pk:
            why = "指向自身" if found == [pk] else ("有歧义" if found else "不存在")
            issues.append(
                HierarchyIssue(
                    "unknown_parent",
                    entry.path,
                    entry.line,
                    f"{entry.name} 的 parent「{ref}」{why}（须为设定文件中同类型（{entry.type}）实体的名称、别名或 id），未设上级",
                )
            )
            continue
        parents[pk] = found[0]
    for cycle in _cycles_break(parents):
        first = where[cycle[0]]
        chain = " > ".join(names[pk] for pk in [*cycle, cycle[0]])
        issues.append(
            HierarchyIssue("parent_cycle", first.path, first.line, f"上级关系成环：{chain}；环上各实体均未设上级")
        )
    current = dict(Entity.objects.filter(book=book, source="file").order_by().values_list("pk", "parent_id"))
    rows_update(
        Entity,
        [{"pk": pk, "parent_id": parents.get(pk)} for pk, old in current.items() if old != parents.get(pk)],
        ["parent_id"],
    )
    return issues


def parent_set_from_extraction(*, entity: Entity, ref: str) -> str | None:
    """Give ``entity`` (created by an extraction) the parent ``ref`` names; the warning text when it is not
    set (unknown, of another type, a file entity's parent — the roster owns it — or a cycle)."""
    if entity.source == "file":
        return f"{entity.canonical_name} 的上级由设定文件决定（名册的 parent:），extraction 的 parent「{ref}」未采用"
    if entity.type not in HIERARCHY_TYPES:
        return f"{entity.canonical_name} 是{entity.type}：只有地点、势力可以有 parent，「{ref}」未采用"
    try:
        parent = entity_get(book=entity.book, ref=ref, type=entity.type)
    except Exception as exc:  # NotFound / Ambiguous: a warning, the entity itself is adopted
        return f"{entity.canonical_name} 的 parent「{ref}」未采用：{getattr(exc, 'message', exc)}"
    if parent.type != entity.type:
        return f"{entity.canonical_name} 的 parent「{ref}」是{parent.type}，须为{entity.type}，未采用"
    if entity.pk in {e.pk for e in _chain_up(parent)} or parent.pk == entity.pk:
        return f"{entity.canonical_name} 的 parent「{ref}」会使上级关系成环，未采用"
    if entity.parent_id != parent.pk:
        Entity.objects.filter(pk=entity.pk).update(parent=parent)
        entity.parent = parent
    return None


# ── reads ───────────────────────────────────────────────────────────────────────────────────────


def _chain_up(entity: Entity) -> list[Entity]:
    """The entity and its ancestors, nearest first (one query per level; chains are a handful deep)."""
    chain, seen = [entity], {entity.pk}
    while chain[-1].parent_id is not None and len(chain) < DEPTH_MAX:
        parent = Entity.objects.filter(pk=chain[-1].parent_id).first()
        if parent is None or parent.pk in seen:
            break
        chain.append(parent)
        seen.add(parent.pk)
    return chain


def _node(entity: Entity) -> dict[str, Any]:
    return {"id": entity.entity_id, "name": entity.canonical_name, "type": entity.type}


def entity_chain_text(*, entity: Entity) -> str:
    """``雾海 > 白鹭洲``: the entity's chain from the top, or its name alone when it has no parent."""
    return " > ".join(e.canonical_name for e in reversed(_chain_up(entity)))


def place_chains(*, book: Book) -> dict[str, str]:
    """{name or non-generic alias of a place that has a parent: its chain from the top (``雾海 > 白鹭洲``)}, for
    the context pack's ``location`` (a name two places share is left out: the pack would guess)."""
    places = {e.pk: e for e in Entity.objects.filter(book=book, type="地点").order_by()}
    chains: dict[str, str] = {}
    shared: set[str] = set()
    names: list[tuple[str, int]] = [(e.canonical_name, pk) for pk, e in places.items()]
    names += list(
        Alias.objects.filter(book=book, entity_id__in=list(places), generic=False)
        .order_by()
        .values_list("alias", "entity_id")
    )
    for name, pk in names:
        entity = places[pk]
        if entity.parent_id is None:
            continue
        chain, seen = [entity], {pk}
        while chain[-1].parent_id in places and chain[-1].parent_id not in seen and len(chain) < DEPTH_MAX:
            seen.add(chain[-1].parent_id)
            chain.append(places[chain[-1].parent_id])
        text = " > ".join(e.canonical_name for e in reversed(chain))
        if chains.get(name, text) != text:
            shared.add(name)
        chains[name] = text
    return {name: text for name, text in chains.items() if name not in shared}


def entity_ancestors(*, book: Book, ref: str, type: str | None = None) -> dict:
    """An entity's ancestors, nearest first, and its chain from the top (``雾海 > 白鹭洲``)."""
    entity = entity_get(book=book, ref=ref, type=type)
    chain = _chain_up(entity)
    return {
        "entity": _node(entity),
        "ancestors": [_node(e) for e in chain[1:]],
        "chain": " > ".join(e.canonical_name for e in reversed(chain)),
    }


def entity_descendants(*, book: Book, ref: str, type: str | None = None) -> dict:
    """Everything within an entity, breadth first (children, then theirs), each with its depth and parent."""
    entity = entity_get(book=book, ref=ref, type=type)
    by_parent: dict[int, list[Entity]] = {}
    for child in Entity.objects.filter(book=book, parent__isnull=False).order_by("entity_id"):
        by_parent.setdefault(child.parent_id, []).append(child)
    found, level, seen, depth = [], [entity], {entity.pk}, 0
    while level and depth < DEPTH_MAX:
        depth += 1
        nxt = []
        for node in level:
            for child in by_parent.get(node.pk, []):
                if child.pk not in seen:
                    seen.add(child.pk)
                    found.append({**_node(child), "depth": depth, "parent": node.entity_id})
                    nxt.append(child)
        level = nxt
    return {"entity": _node(entity), "descendants": found}


def entity_within(*, book: Book, ref: str, container: str, type: str | None = None) -> dict:
    """Whether ``ref`` lies within ``container`` (its parent, or a parent of its parent…), with the path."""
    entity = entity_get(book=book, ref=ref, type=type)
    outer = entity_get(book=book, ref=container, type=type or entity.type)
    if outer.type != entity.type:
        raise InvalidInput(
            f"「{outer.canonical_name}」是{outer.type}，「{entity.canonical_name}」是{entity.type}：层级只在同类型内",
            extra={"ref": ref, "container": container},
        )
    chain = _chain_up(entity)
    pks = [e.pk for e in chain]
    within = outer.pk in pks[1:]
    path = chain[: pks.index(outer.pk) + 1] if within else []
    return {
        "entity": _node(entity),
        "container": _node(outer),
        "within": within,
        "path": " > ".join(e.canonical_name for e in reversed(path)),
    }
