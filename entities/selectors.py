"""Reads of entities. Alias resolution first (every other app resolves names through it), then the
state-over-time replay, relationships and the graph, appearances and the curation queue.

Each read exists once, here; ``entities.interfaces`` registers the ones exposed to the CLI and
``entities.api`` serves the same functions over REST.
"""

from collections import defaultdict
from typing import Any, TypeVar

import yaml
from django.db.models import Count, Max, Min, Q, QuerySet, Sum

from core.models import Book, Document, TimelineRow
from core.selectors import document_section, timeline_volume_check
from entities.character_rows import CharacterRow, character_changes, character_parts, characters_named
from entities.models import (
    Alias,
    AmbiguousMention,
    Appearance,
    Entity,
    Extraction,
    PendingItem,
    Relationship,
    RelationshipEvent,
    StateChange,
    TagApplication,
)
from entities.state_ops import state_replay
from kernel.exceptions import Ambiguous, InvalidInput, NotFound

_Named = TypeVar("_Named", Entity, CharacterRow)  # an entity, or the character read's plain row of one


def _alias_matches(*, book: Book, alias: str, type: str | None, number: int | None) -> QuerySet[Entity]:
    # One query: the aliases (within their window) as a subquery, or the canonical name.
    rows = Alias.objects.filter(book=book, alias=alias)
    if number is not None:
        rows = rows.filter(Q(valid_from__isnull=True) | Q(valid_from__lte=number))
        rows = rows.filter(Q(valid_to__isnull=True) | Q(valid_to__gte=number))
    # The book inside each arm of the OR, not around it: SQLite then looks each arm up in its index (a
    # multi-index OR) instead of reading every entity of the book (1,000 entities: 0.5 → 0.03 ms).
    matches = Entity.objects.filter(
        Q(id__in=rows.filter(entity__book=book).order_by().values("entity_id")) | Q(book=book, canonical_name=alias)
    )
    if type:
        matches = matches.filter(type=type)
    return matches.order_by("type", "entity_id")


def alias_resolve(*, book: Book, alias: str, type: str | None = None, number: int | None = None) -> Entity:
    """The one entity named ``alias`` (canonical name or alias, optionally of ``type`` and valid at
    ``number``). Several → Ambiguous listing the candidates; none → NotFound."""
    return _the_one(list(_alias_matches(book=book, alias=alias, type=type, number=number)), alias=alias, type=type)


def _the_one(candidates: list[_Named], *, alias: str, type: str | None) -> _Named:
    """``alias_resolve``'s answer from its candidates (in ``_alias_matches``' order)."""
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


def alias_index(*, book: Book) -> dict[str, set[int]]:
    """Every name of the book's entities (canonical names and aliases, ignoring validity windows)
    → the primary keys of the entities it names."""
    index: dict[str, set[int]] = defaultdict(set)
    for name, pk in Entity.objects.filter(book=book).order_by().values_list("canonical_name", "id"):
        index[name].add(pk)
    for name, pk in Alias.objects.filter(book=book).order_by().values_list("alias", "entity_id"):
        index[name].add(pk)
    return dict(index)


def _chapter_check(number: int | None, name: str = "as_of") -> None:
    if number is not None and number < 0:
        raise InvalidInput(f"{name} 必须是非负整数章节号", extra={name: number})


# --- state over time -------------------------------------------------------------------------


def _changes(*, entity: Entity, number: int | None) -> QuerySet[StateChange]:
    rows = StateChange.objects.filter(entity=entity)
    if number is not None:
        rows = rows.filter(chapter__lte=number)
    return rows.order_by("chapter", "seq", "id")


def entity_state_as_of(*, entity: Entity, number: int | None = None) -> dict:
    """The state of ``entity`` at the end of ``number`` (None = now): base state + replayed changes."""
    _chapter_check(number)
    return state_replay(entity.base_state, _changes(entity=entity, number=number).values("op", "field", "new"))


def entity_states_as_of(*, entities: list[Entity], number: int | None = None) -> dict[int, dict]:
    """``entity_state_as_of`` of several entities in one query: entity pk → state."""
    _chapter_check(number)
    rows = StateChange.objects.filter(entity__in=[e.pk for e in entities])
    if number is not None:
        rows = rows.filter(chapter__lte=number)
    # Plain rows, not models: a context pack or an entity list replays hundreds of changes.
    changes: dict[int, list[dict]] = defaultdict(list)
    for change in rows.order_by("chapter", "seq", "id").values("entity_id", "op", "field", "new"):
        changes[change["entity_id"]].append(change)
    return {e.pk: state_replay(e.base_state, changes.get(e.pk, ())) for e in entities}


def change_to_dict(change: StateChange) -> dict:
    return {
        "chapter": change.chapter,
        "seq": change.seq,
        "field": change.field,
        "op": change.op,
        "old": change.old,
        "new": change.new,
        "reason": change.reason,
        "confidence": change.confidence,
        "source": change.source,
    }


def entity_state_changes(
    *,
    entity: Entity,
    field: str | None = None,
    from_chapter: int | None = None,
    to_chapter: int | None = None,
) -> list[dict]:
    """Every change of ``entity`` in replay order, optionally of one field and within a chapter range."""
    rows = StateChange.objects.filter(entity=entity)
    if field:
        rows = rows.filter(field=field)
    if from_chapter is not None:
        rows = rows.filter(chapter__gte=from_chapter)
    if to_chapter is not None:
        rows = rows.filter(chapter__lte=to_chapter)
    return [change_to_dict(c) for c in rows.order_by("chapter", "seq", "id")]


# --- entities ----------------------------------------------------------------------------------


def entity_to_dict(entity: Entity, *, state: dict | None = None, aliases: list[dict] | None = None) -> dict:
    return {
        "id": entity.entity_id,
        "type": entity.type,
        "canonical_name": entity.canonical_name,
        "tier": entity.tier,
        "description": entity.description,
        "is_protagonist": entity.is_protagonist,
        "archived": entity.archived,
        "first_appearance": entity.first_appearance,
        "last_appearance": entity.last_appearance,
        "source": entity.source,
        "aliases": aliases if aliases is not None else _alias_list(entity),
        "state": state if state is not None else entity_state_as_of(entity=entity),
    }


def _alias_list(entity: Entity) -> list[dict]:
    return [
        {
            "alias": a.alias,
            "valid_from": a.valid_from,
            "valid_to": a.valid_to,
            "note": a.note,
            "source": a.source,
            "generic": a.generic,
        }
        for a in entity.aliases.order_by("alias")
    ]


def entity_detail(*, book: Book, ref: str, type: str | None = None, as_of: int | None = None) -> dict:
    """An entity (by id, else by alias) with its aliases and its state now or as of a chapter."""
    entity = entity_get(book=book, ref=ref, type=type)
    data = entity_to_dict(entity, state=entity_state_as_of(entity=entity, number=as_of))
    data["as_of"] = as_of
    return data


ENTITY_PAGE_MAX = 1000
ENTITY_OFFSET_MAX = 1_000_000


def entity_list(
    *,
    book: Book,
    type: str | None = None,
    tier: str | None = None,
    include_archived: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> list[dict]:
    """Entities of a book (optionally of one type / tier), each with aliases and current state;
    protagonist first, then by type and id. ``limit`` / ``offset`` page through a long list (a
    3,000-chapter book has a thousand entities); without ``limit``, all of them."""
    if limit is not None and not 1 <= limit <= ENTITY_PAGE_MAX:
        raise InvalidInput(f"limit 必须在 1 到 {ENTITY_PAGE_MAX} 之间（收到 {limit}）", extra={"limit": limit})
    if not 0 <= offset <= ENTITY_OFFSET_MAX:
        raise InvalidInput(f"offset 必须在 0 到 {ENTITY_OFFSET_MAX} 之间（收到 {offset}）", extra={"offset": offset})
    rows = Entity.objects.filter(book=book)
    if type:
        rows = rows.filter(type=type)
    if tier:
        rows = rows.filter(tier=tier)
    if not include_archived:
        rows = rows.filter(archived=False)
    rows = rows.order_by("-is_protagonist", "type", "entity_id")
    entities = list(rows[offset : offset + limit] if limit is not None else rows[offset:])
    states = entity_states_as_of(entities=entities)
    aliases: dict[int, list] = defaultdict(list)
    for a in (
        Alias.objects.filter(entity__in=[e.pk for e in entities])
        .order_by("alias")
        .values("entity_id", "alias", "valid_from", "valid_to", "note", "source", "generic")
    ):
        aliases[a.pop("entity_id")].append(a)
    return [entity_to_dict(e, state=states[e.pk], aliases=aliases[e.pk]) for e in entities]


def entity_list_core(*, book: Book) -> list[dict]:
    """The core (核心) entities: protagonist first."""
    return entity_list(book=book, tier=Entity.Tier.CORE)


def entities_by_alias(*, book: Book, alias: str, type: str | None = None, chapter: int | None = None) -> dict:
    """Every entity an alias names (no error on ambiguity): ``resolved`` is the id when exactly one."""
    candidates = list(_alias_matches(book=book, alias=alias, type=type, number=chapter))
    return {
        "alias": alias,
        "type": type,
        "chapter": chapter,
        "ambiguous": len(candidates) > 1,
        "resolved": candidates[0].entity_id if len(candidates) == 1 else None,
        "candidates": [{"id": e.entity_id, "type": e.type, "canonical_name": e.canonical_name} for e in candidates],
    }


def entity_changes_list(
    *,
    book: Book,
    ref: str,
    field: str | None = None,
    from_chapter: int | None = None,
    to_chapter: int | None = None,
) -> dict:
    """The state changes of an entity (by id or alias)."""
    entity = entity_get(book=book, ref=ref)
    return {
        "id": entity.entity_id,
        "canonical_name": entity.canonical_name,
        "changes": entity_state_changes(entity=entity, field=field, from_chapter=from_chapter, to_chapter=to_chapter),
    }


# --- characters: the P0 character reads (card or roster entry + replayed state) -----------------

# The format's identity keys of a character card (docs/book-format.md); every other key of the front
# matter is initial state (``Entity.base_state``), which is what replay starts from.
CARD_IDENTITY = ("name", "aliases", "tier", "protagonist", "description", "id")
# PostgreSQL's jsonb does not keep key order, so keys are printed in one fixed order on every
# database: the format's keys first, then any others alphabetically.
_CARD_ORDER = (*CARD_IDENTITY, "status", "location", "realm", "possessions", "faction")


def _card_ordered(front_matter: dict) -> dict:
    rank = {key: i for i, key in enumerate(_CARD_ORDER)}
    return {k: front_matter[k] for k in sorted(front_matter, key=lambda k: (rank.get(k, len(rank)), k))}


def _character(*, book: Book, name: str) -> Entity:
    # By name or alias, as an author asks; an agent holding an id (from entity-list) may pass that. One
    # query for both: the character whose id is ``name`` wins, else ``alias_resolve``'s answer.
    # (the book inside each arm of the OR: see _alias_matches)
    named = Alias.objects.filter(book=book, alias=name, entity__book=book).order_by().values("entity_id")
    rows = list(
        Entity.objects.filter(Q(book=book, entity_id=name) | Q(book=book, canonical_name=name) | Q(id__in=named))
        .filter(type=Entity.Type.CHARACTER)
        .order_by("type", "entity_id")
    )
    for entity in rows:
        if entity.entity_id == name:
            return entity
    return _the_one(rows, alias=name, type=Entity.Type.CHARACTER)


def _card_document(*, book: Book, entity: Entity) -> Document | None:
    return Document.objects.filter(book=book, kind=Document.Kind.CHARACTER_CARD, key=entity.canonical_name).first()


def _card(*, book: Book, name: str) -> tuple[Entity, Document]:
    entity = _character(book=book, name=name)
    document = _card_document(book=book, entity=entity)
    if document is None:
        where = f"（定义于 {entity.source_path}；角色信息见 story character）" if entity.source_path else ""
        raise NotFound(
            f"角色 '{entity.canonical_name}' 没有角色卡{where}",
            extra={"character": entity.canonical_name, "source_path": entity.source_path},
        )
    return entity, document


def _character_source(entity: Entity | CharacterRow, has_card: bool) -> str:
    if has_card:
        return "角色卡"
    if entity.source_path.endswith("名册.yaml"):
        return "名册"
    return {"file": "正文标签", "extraction": "抽取", "migration": "迁移", "admin": "后台"}.get(
        entity.source, entity.source
    )


def character_meta(*, book: Book, name: str, as_of: int | None = None) -> dict:
    """A character (canonical name or alias) with its state now or at the end of chapter ``as_of``:
    the card's (or the roster entry's) initial state with every recorded change replayed, as
    ``entity`` answers it. ``{"id", "name", "aliases", "tier", "protagonist", "description",
    "source", "source_path", "as_of", "current_chapter", "state", "changed_in", "sections"}``;
    ``as_of`` is the chapter the state is as of (the current chapter when omitted; None when the
    book has no finalized chapter: the initial state), ``changed_in`` the chapter of each state key's
    last change up to then, ``sections`` the card's ``##`` headings ([] without a card).
    Plain rows in three queries (``entities.character_rows``): an agent calls it before every chapter."""
    _chapter_check(as_of)
    found = characters_named(book=book, name=name)
    entity = next((row for row in found if row.entity_id == name), None) or _the_one(
        found, alias=name, type=Entity.Type.CHARACTER
    )
    current, headings, aliases = character_parts(book=book, entity=entity)
    changes = character_changes(entity=entity, chapter=as_of)
    changed_in: dict[str, int] = {}
    for change in changes:
        changed_in[change["field"]] = change["chapter"]
    return {
        "id": entity.entity_id,
        "name": entity.canonical_name,
        "aliases": sorted(aliases),
        "tier": entity.tier,
        "protagonist": entity.is_protagonist,
        "description": entity.description,
        "source": _character_source(entity, headings is not None),
        "source_path": entity.source_path,
        "as_of": as_of if as_of is not None else current,
        "current_chapter": current,
        "state": _card_ordered(state_replay(entity.base_state, changes)),
        "changed_in": _card_ordered(changed_in),
        "sections": [heading for heading in headings or () if heading],
    }


def character_card(*, book: Book, name: str) -> str:
    """The whole character card as written: its YAML front matter (keys in the format's order;
    the *initial* state — ``character`` answers the current one) between ``---`` lines, then the body."""
    _, document = _card(book=book, name=name)
    front = yaml.safe_dump(_card_ordered(document.front_matter or {}), allow_unicode=True, sort_keys=False).strip()
    return f"---\n{front}\n---\n{document.body}"


def character_section(*, book: Book, name: str, heading: str) -> str:
    """A ``##`` section of a character card (外貌, 性格, …)."""
    entity, document = _card(book=book, name=name)
    return document_section(document=document, heading=heading, label=f"{entity.canonical_name}的角色卡")


def alias_lookup(*, book: Book, alias: str, type: str | None = None, chapter: int | None = None) -> dict:
    """Resolve an alias (or canonical name) to its entity: ``{"alias", "id", "type", "canonical_name"}``.
    Several entities → 409 listing the candidates."""
    entity = alias_resolve(book=book, alias=alias, type=type or None, number=chapter)
    return {"alias": alias, "id": entity.entity_id, "type": entity.type, "canonical_name": entity.canonical_name}


def character_list(*, book: Book, status: str | None = None) -> list[dict]:
    """Characters (entities of type 角色, not archived), optionally with a given current ``status``
    (存活, 死亡, …), each with its current status and location (initial state with every recorded
    change replayed): ``[{"id", "name", "tier", "status", "location", "protagonist"}]`` in id order."""
    rows = list(book.entities.filter(type=Entity.Type.CHARACTER, archived=False).order_by("entity_id"))
    states = entity_states_as_of(entities=rows)
    out = []
    for e in rows:
        state = states[e.pk]
        if status and state.get("status") != status:
            continue
        out.append(
            {
                "id": e.entity_id,
                "name": e.canonical_name,
                "tier": e.tier,
                "status": state.get("status"),
                "location": state.get("location"),
                "protagonist": e.is_protagonist,
            }
        )
    return out


def _character_names(*, book: Book, name: str) -> tuple[str, set[str], bool]:
    """(canonical name, every name of the character called ``name``, whether it is a known entity)."""
    try:
        entity = _character(book=book, name=name)
    except NotFound:
        return name, {name}, False
    return entity.canonical_name, {entity.canonical_name, *entity.aliases.values_list("alias", flat=True)}, True


def timeline_character(*, book: Book, name: str, volume: int | None = None) -> dict:
    """Timeline rows where a character is present, matched by canonical name or any alias
    (optionally within one volume): ``{"character", "names", "rows": [{"volume", "chapter", …}]}``.
    A name that is no entity still matches rows that list it as written; otherwise it is a 404."""
    canonical, names, known = _character_names(book=book, name=name)
    rows = TimelineRow.objects.filter(book=book)
    if volume is not None:
        timeline_volume_check(book=book, volume=volume)
        rows = rows.filter(volume=volume)
    fields = ("volume", "chapter", "story_time", "event", "present")
    picked = [
        dict(zip(fields, row, strict=True))
        for row in rows.order_by("volume", "order").values_list(*fields)
        if names.intersection(p.strip() for p in row[4])
    ]
    if not picked and not known:
        raise NotFound(f"角色 '{name}' 不存在", extra={"character": name})
    return {"character": canonical, "names": sorted(names), "rows": picked}


# --- relationships -------------------------------------------------------------------------------


def _edges_as_of(*, book: Book, as_of: int | None) -> dict[int, dict]:
    """Relationship id → edge as it stood at ``as_of`` (None = now): established by its first event
    at or before ``as_of``; described by its latest non-empty description at or before it."""
    events = RelationshipEvent.objects.filter(relationship__book=book)
    if as_of is not None:
        events = events.filter(Q(chapter__isnull=True) | Q(chapter__lte=as_of))
    edges: dict[int, dict] = {}
    for ev in events.order_by("relationship_id", "chapter", "id").values("relationship_id", "chapter", "description"):
        edge = edges.setdefault(ev["relationship_id"], {"chapter": ev["chapter"], "description": "", "last": None})
        if ev["description"]:
            edge["description"] = ev["description"]
        edge["last"] = ev["chapter"]
    return edges


def _edge_dict(rel: Relationship, edge: dict) -> dict:
    return {
        "from": rel.from_entity.entity_id,
        "to": rel.to_entity.entity_id,
        "type": rel.type,
        "description": edge["description"],
        "chapter": edge["chapter"],
        "last_chapter": edge["last"],
    }


def entity_relationships(*, book: Book, ref: str, as_of: int | None = None) -> dict:
    """Relationships of an entity (both directions) as of a chapter, each with its event history."""
    _chapter_check(as_of)
    entity = entity_get(book=book, ref=ref)
    edges = _edges_as_of(book=book, as_of=as_of)
    rels = (
        Relationship.objects.filter(Q(from_entity=entity) | Q(to_entity=entity), id__in=list(edges))
        .select_related("from_entity", "to_entity")
        .prefetch_related("events")
        .order_by("chapter", "id")
    )
    out = []
    for rel in rels:
        item = _edge_dict(rel, edges[rel.id])
        item["events"] = [
            {"chapter": ev.chapter, "description": ev.description, "source": ev.source}
            for ev in rel.events.all()
            if as_of is None or ev.chapter is None or ev.chapter <= as_of
        ]
        out.append(item)
    return {"id": entity.entity_id, "as_of": as_of, "relationships": out}


def _mermaid_node(entity_id: str) -> str:
    return "n_" + "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in entity_id)


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;").replace("|", "/")


def relationship_graph(*, book: Book, ref: str, depth: int = 1, as_of: int | None = None) -> dict:
    """The relationship graph around an entity: every entity within ``depth`` hops (either direction)
    as of a chapter, as JSON nodes/edges plus a Mermaid ``graph LR`` text."""
    _chapter_check(as_of)
    if depth < 1 or depth > 5:
        raise InvalidInput("depth 必须在 1 到 5 之间", extra={"depth": depth})
    center = entity_get(book=book, ref=ref)
    edges = _edges_as_of(book=book, as_of=as_of)
    rels = list(Relationship.objects.filter(id__in=list(edges)).select_related("from_entity", "to_entity"))
    adjacency: dict[int, list[Relationship]] = defaultdict(list)
    for rel in rels:
        adjacency[rel.from_entity_id].append(rel)
        adjacency[rel.to_entity_id].append(rel)
    seen = {center.id: 0}
    frontier = [center.id]
    used: dict[int, Relationship] = {}
    for hop in range(1, depth + 1):
        nxt = []
        for node in frontier:
            for rel in adjacency[node]:
                used[rel.id] = rel
                other = rel.to_entity_id if rel.from_entity_id == node else rel.from_entity_id
                if other not in seen:
                    seen[other] = hop
                    nxt.append(other)
        frontier = nxt
    # Edges between two nodes of the last ring are part of the neighbourhood too.
    for rel in rels:
        if rel.from_entity_id in seen and rel.to_entity_id in seen:
            used[rel.id] = rel
    entities = {e.id: e for e in Entity.objects.filter(id__in=list(seen))}
    nodes = [
        {
            "id": entities[pk].entity_id,
            "canonical_name": entities[pk].canonical_name,
            "type": entities[pk].type,
            "tier": entities[pk].tier,
            "distance": dist,
        }
        for pk, dist in sorted(seen.items(), key=lambda kv: (kv[1], entities[kv[0]].entity_id))
    ]
    edge_list = sorted(
        (_edge_dict(rel, edges[rel.id]) for rel in used.values()),
        key=lambda e: (e["chapter"] if e["chapter"] is not None else -1, e["from"], e["to"], e["type"]),
    )
    lines = ["graph LR"]
    for node in nodes:
        lines.append(f'  {_mermaid_node(node["id"])}["{_mermaid_text(node["canonical_name"])}"]')
    for edge in edge_list:
        lines.append(
            f'  {_mermaid_node(edge["from"])} -->|"{_mermaid_text(edge["type"])}"| {_mermaid_node(edge["to"])}'
        )
    return {
        "center": center.entity_id,
        "depth": depth,
        "as_of": as_of,
        "nodes": nodes,
        "edges": edge_list,
        "mermaid": "\n".join(lines),
    }


def relationship_graph_mermaid(*, book: Book, ref: str, depth: int = 1, as_of: int | None = None) -> str:
    """The Mermaid text of :func:`relationship_graph`."""
    return relationship_graph(book=book, ref=ref, depth=depth, as_of=as_of)["mermaid"]


# --- appearances ---------------------------------------------------------------------------------


def entity_appearances(*, book: Book, ref: str) -> dict:
    """The chapters an entity appears in (scan and extraction rows merged per chapter), and apart the
    weak mentions of its generic aliases (never appearances; ``candidates`` says who else they may mean)."""
    entity = entity_get(book=book, ref=ref)
    chapters: dict[int, dict] = {}
    for row in Appearance.objects.filter(entity=entity).order_by("chapter", "source"):
        item = chapters.setdefault(
            row.chapter, {"chapter": row.chapter, "count": 0, "first_offset": None, "aliases": {}, "sources": []}
        )
        item["sources"].append(row.source)
        if row.source == Appearance.Source.SCAN:
            item["count"] = row.count
            item["first_offset"] = row.first_offset
            item["aliases"] = row.aliases
        elif not item["count"]:
            item["count"] = row.count
    generic = entity.aliases.filter(generic=True).values_list("alias", flat=True)
    weak = [
        {"chapter": m.chapter, "alias": m.alias, "count": m.count, "candidates": m.candidates}
        for m in AmbiguousMention.objects.filter(book=book, generic=True, alias__in=list(generic)).order_by(
            "chapter", "alias"
        )
        if entity.entity_id in m.candidates
    ]
    return {
        "id": entity.entity_id,
        "first_appearance": entity.first_appearance,
        "last_appearance": entity.last_appearance,
        "chapters": list(chapters.values()),
        "weak_mentions": weak,
    }


def chapter_ambiguous_mentions(*, book: Book, chapter: int | None = None) -> list[dict]:
    """Aliases found in the text that name several entities, and the weak mentions of generic aliases
    (``generic``: 他, 老爷 — with their candidates); reported, never attributed."""
    rows = AmbiguousMention.objects.filter(book=book)
    if chapter is not None:
        rows = rows.filter(chapter=chapter)
    return [
        {
            "chapter": r.chapter,
            "alias": r.alias,
            "count": r.count,
            "first_offset": r.first_offset,
            "candidates": r.candidates,
            "generic": r.generic,
        }
        for r in rows.order_by("chapter", "alias")
    ]


def entity_stats(*, book: Book) -> dict:
    """Counts for a book: entities by type and tier, aliases, ambiguous aliases, changes, relationships,
    appearances, the pending queue, and the most frequent entities."""
    entities = Entity.objects.filter(book=book)
    by_type = dict(entities.values_list("type").annotate(n=Count("id")).order_by("type"))
    by_tier = dict(entities.values_list("tier").annotate(n=Count("id")).order_by("tier"))
    names = alias_index(book=book)
    generic = set(Alias.objects.filter(book=book, generic=True).order_by().values_list("alias", flat=True))
    # generic aliases are shared by design (他 names every man): listed apart, not as conflicts
    ambiguous = sorted(a for a, pks in names.items() if len(pks) > 1 and a not in generic)
    weak = AmbiguousMention.objects.filter(book=book, generic=True).aggregate(n=Sum("count"))["n"] or 0
    top = (
        Appearance.objects.filter(book=book, source=Appearance.Source.SCAN)
        .values("entity__entity_id", "entity__canonical_name")
        .annotate(chapters=Count("id"), first=Min("chapter"), last=Max("chapter"))
        .order_by("-chapters", "entity__entity_id")[:10]
    )
    pending = dict(
        PendingItem.objects.filter(book=book).values_list("status").annotate(n=Count("id")).order_by("status")
    )
    return {
        "entities": entities.count(),
        "by_type": by_type,
        "by_tier": by_tier,
        "archived": entities.filter(archived=True).count(),
        "aliases": Alias.objects.filter(book=book).count(),
        "ambiguous_aliases": ambiguous,
        "generic_aliases": sorted(generic),
        "weak_mentions": weak,
        "state_changes": StateChange.objects.filter(book=book).count(),
        "relationships": Relationship.objects.filter(book=book).count(),
        "appearances": Appearance.objects.filter(book=book, source=Appearance.Source.SCAN).count(),
        "pending": pending,
        "top_entities": [
            {
                "id": row["entity__entity_id"],
                "canonical_name": row["entity__canonical_name"],
                "chapters": row["chapters"],
                "first": row["first"],
                "last": row["last"],
            }
            for row in top
        ],
    }


# --- curation -----------------------------------------------------------------------------------


def pending_to_dict(item: PendingItem) -> dict[str, Any]:
    return {
        "pk": item.pk,
        "chapter": item.chapter,
        "kind": item.kind,
        "confidence": item.confidence,
        "status": item.status,
        "payload": item.payload,
        "note": item.note,
        "resolution": item.resolution,
        "source": item.source,
    }


def pending_list(*, book: Book, status: str | None = "pending") -> list[dict]:
    """The curation queue, lowest confidence first (items without a confidence last)."""
    rows = PendingItem.objects.filter(book=book)
    if status:
        rows = rows.filter(status=status)
    # Sorted in Python: SQLite puts NULL confidences first and PostgreSQL last; we want them last on both.
    items = list(rows)
    items.sort(key=lambda p: (p.status, p.confidence is None, p.confidence or 0.0, p.chapter or 0, p.pk))
    return [pending_to_dict(p) for p in items]


def extraction_get(*, book: Book, number: int) -> dict:
    """The last extraction ingested for chapter ``number``: counts, warnings, scenes, chapter_meta, uncertain."""
    row = Extraction.objects.filter(book=book, chapter=number).first()
    if row is None:
        raise NotFound(f"第{number}章还没有抽取结果", extra={"chapter": number})
    return {
        "chapter": row.chapter,
        "source": row.source,
        "summary": row.summary,
        "warnings": row.warnings,
        "scenes": row.scenes,
        "chapter_meta": row.chapter_meta,
        "uncertain": row.uncertain,
        "updated_at": row.updated_at.isoformat(),
    }


def tag_issues_list(*, book: Book, chapter: int | None = None) -> list[dict]:
    """Manual tags skipped at finalize, with the reason (line numbers are file lines)."""
    rows = TagApplication.objects.filter(book=book).exclude(issues=[])
    if chapter is not None:
        rows = rows.filter(chapter=chapter)
    return [{"chapter": r.chapter, "issues": r.issues} for r in rows.order_by("chapter")]


def pending_get(*, book: Book, pk: int) -> PendingItem:
    item = PendingItem.objects.filter(book=book, pk=pk).first()
    if item is None:
        raise NotFound(f"待确认项 #{pk} 不存在（《{book.title or book.slug}》）", extra={"pk": pk})
    return item
