"""The entities app's journaled writes, each declared once with its replayer (``kernel.journal_ops``):
ingestion, the pending queue, curation (entities, aliases, state changes, relationships), merges and
archives, the old plugin's state import and discovery's queue. Registered in ``EntitiesConfig.ready()``
and imported on the first replay; the rebuild and the heal (``bookfiles.rebuilder.journal_replay``) apply an
event through the declaration of its op.

A replayer takes ``(book, attachment or None, event)`` and names rows by the event's stable keys
(entity ids, chapter numbers, a pending item's chapter + kind + payload), never a database id.
"""

import json
from pathlib import Path
from typing import Any

from django.db import transaction

from core.journal import LOG_PATH, journal_attachment_path
from core.models import Book
from entities.discovery.services import book_discover, discovery_merge, discovery_queue_replay, discovery_split
from entities.legacy_state import legacy_state_import
from entities.mentions import mentions_follow
from entities.models import Alias, Entity, Extraction, PendingItem, StateChange
from entities.selectors import entity_get, pending_get
from entities.services.curation import (
    alias_delete,
    alias_save,
    entity_add,
    entity_edit,
    relationship_delete,
    relationship_find,
    relationship_save,
    state_change_delete,
    state_change_edit,
    state_change_find,
    state_changes_order_restore,
)
from entities.services.ingest import IngestKnown, extraction_ingest, ingest_known_load, pending_decision_key
from entities.services.marks import aliases_generic_set, entity_merge
from entities.services.pending import (
    pending_item_confirm,
    pending_item_find,
    pending_item_reject,
    pending_item_restore,
)
from entities.services.writes import entities_archive, state_change_curate
from kernel.exceptions import InvalidInput, NotFound
from kernel.journal_ops import WriteDoor, journal_op, journal_replay_wrap

# Names an event adds are not scanned for event by event (an automaton rebuilt and a chapter rescanned
# per ingestion): once, at the end of the replay, in the chapters where the names that changed occur.
journal_replay_wrap(mentions_follow)


def _entity(book: Book, ref: str | None) -> Entity | None:
    return None if ref is None else entity_get(book=book, ref=ref)


def _pending(book: Book, key: dict[str, Any]) -> PendingItem:
    return pending_item_find(book=book, number=key["chapter"], kind=key["kind"], payload=key["payload"])


def _pending_decided(book: Book, e: dict[str, Any]) -> PendingItem:
    """The held item a decision names; where its chapter's extraction no longer holds it (the author
    edited the file since: its chapter has an extraction, and the item is not queued), the item as the
    decision recorded it, so the decision keeps its result in a rebuild as it did live."""
    try:
        return _pending(book, e)
    except NotFound:
        if e["kind"] not in _SECTIONS or not Extraction.objects.filter(book=book, chapter=e["chapter"]).exists():
            raise
        return pending_item_restore(book=book, key=e)


# ── the extraction: re-applied when the author edits its file ──
def extraction_reapply(book: Book, event: dict[str, Any], payload: Any, events: list[dict[str, Any]]) -> None:
    """The re-ingestion of an edited extraction, as at its place in the journal: it replaces only what
    that ingestion wrote, and what later events made of it is made again.

    - its chapter's state changes are put back in the order a replay gives them: a chapter tag's
      first, then those written before the ingestion, the ingested ones, those written after it (a
      curator's confirmation since); the replace path alone would put the re-ingested rows last;
    - another chapter's ingested changes a curator moved into the chapter are not its to replace;
      they keep their place (before or after the ingested ones, by when they were moved);
    - a curator's later edits and deletions of the ingested state changes are applied again over the
      new rows, as a rebuild replays them after the edited ingestion: the rows they moved to other
      chapters go first (the replace path clears only the chapter's own) and come back at the place
      they had there (not after the rows later events added to that chapter);
    - the held items decided after it are held by it (counted; their decided rows kept)."""
    chapter = event["chapter"]
    touching, moved = _ingested_changes_curated(event, events)
    places: dict[str, int] = {}  # a moved row's key → its seq in the chapter it was moved to
    for key in moved:
        try:
            row = state_change_find(book=book, key=key)
        except NotFound:
            continue  # a later write took it away already: the replay below finds it gone too
        places[_key_text(key)] = row.seq
        state_change_delete(change=row, journal=False)
    moved_in: dict[int, bool] = {}  # pk → moved here after the ingestion
    for key, after in _moved_in(chapter, event["seq"], events).items():
        try:
            moved_in[state_change_find(book=book, key=json.loads(key)).pk] = after
        except NotFound:
            continue
    since = Extraction.objects.filter(book=book, chapter=chapter).values_list("updated_at", flat=True).first()
    later = frozenset(
        pending_decision_key(kind=e["kind"], payload=e.get("payload"))
        for e in events
        if e["seq"] > event["seq"] and e["op"] in ("pending.confirm", "pending.reject") and e.get("chapter") == chapter
    )
    extraction_ingest(
        book=book,
        number=chapter,
        payload=payload,
        journal=False,
        hooks=False,
        decided_later=later,
        kept_changes=frozenset(moved_in),
    )
    if since is not None:
        state_changes_order_restore(book=book, number=chapter, ingested_at=since, moved_in=moved_in)
    for later_event in touching:
        try:
            with transaction.atomic():
                _CURATION_REPLAY[later_event["op"]](book, None, later_event)
        except NotFound:
            pass  # the edited file no longer holds that change: a rebuild skips the event too
    for key in moved:
        seq = places.get(_key_text(key))
        pk = _found_pk(book, key) if seq is not None else None
        if pk is not None:  # its seq there is free: the row that held it went first
            StateChange.objects.filter(pk=pk).exclude(seq=seq).update(seq=seq)


def _key_text(key: dict[str, Any]) -> str:
    return json.dumps(key, sort_keys=True, ensure_ascii=False, default=str)


def _found_pk(book: Book, key: dict[str, Any]) -> int | None:
    try:
        return state_change_find(book=book, key=key).pk
    except NotFound:
        return None  # the edited file no longer holds it: its later edit was skipped


def _moved_in(chapter: int, seq: int, events: list[dict[str, Any]]) -> dict[str, bool]:
    """The keys of the state changes another chapter's ingestion made that the journal's curator edits
    leave at ``chapter`` (followed through their edits), each with whether it was moved there after
    the event of ``seq``."""
    chains: dict[str, tuple[dict[str, Any], int | None]] = {}  # key now → (key first, seq of the last move)
    for e in events:
        if e["op"] not in _CURATION_REPLAY:
            continue
        first, moved_at = chains.pop(_key_text(e["key"]), (e["key"], None))
        if e["op"] == "state_change.edit":
            now = {**e["key"], "chapter": e["chapter"], "field": e["field"], "change": e["change"], "new": e.get("new")}
            chains[_key_text(now)] = (first, e["seq"] if e["chapter"] != e["key"]["chapter"] else moved_at)
    return {
        key: moved_at > seq
        for key, (first, moved_at) in chains.items()
        if first.get("source") == "extraction"
        and first.get("chapter") != chapter
        and json.loads(key)["chapter"] == chapter
        and moved_at is not None
    }


def _ingested_changes_curated(
    event: dict[str, Any], events: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The later ``state_change.edit`` / ``.delete`` events on the state changes an ingestion of
    ``event``'s chapter made (followed through their edits, in order), and the keys of the rows they
    left in other chapters."""
    chapter = event["chapter"]
    tracked: list[dict[str, Any]] = []
    touching = []
    for later in events:
        if later["seq"] <= event["seq"] or later["op"] not in _CURATION_REPLAY:
            continue
        key = later["key"]
        ingested = key.get("source") == "extraction" and key.get("chapter") == chapter
        if not ingested and key not in tracked:
            continue
        touching.append(later)
        if key in tracked:
            tracked.remove(key)
        if later["op"] == "state_change.edit":
            result = {**key, "chapter": later["chapter"], "field": later["field"], "change": later["change"]}
            tracked.append({**result, "new": later.get("new")})
    return touching, [key for key in tracked if key["chapter"] != chapter]


_SECTIONS = {
    "entity_new": "entities_new",
    "entity_appeared": "entities_appeared",
    "state_change": "state_changes",
    "relationship": "relationships_new",
    "uncertain": "uncertain",
}


def extraction_orphans(event: dict[str, Any], data: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The later decisions on the chapter's held items that the edited payload no longer holds (their
    results stay; a rebuild into an empty database would skip them)."""
    held = {
        json.dumps([kind, item], sort_keys=True, ensure_ascii=False, default=str)
        for kind, name in _SECTIONS.items()
        for item in (data.get(name) or [] if isinstance(data, dict) else [])
    }
    orphans = []
    for later in events:
        if later["seq"] <= event["seq"] or later["op"] not in ("pending.confirm", "pending.reject"):
            continue
        if later.get("chapter") != event["chapter"] or later.get("kind") not in _SECTIONS:
            continue
        key = json.dumps([later["kind"], later.get("payload")], sort_keys=True, ensure_ascii=False, default=str)
        if key not in held:
            orphans.append(later)
    return orphans


@journal_op(
    "extraction.ingest",
    service=extraction_ingest,
    schema="entities.schemas:ExtractionIn",
    help="数据智能体对一章的抽取结果（附件：extractions/<章>-<seq>.json）",
    run_state=ingest_known_load,
    savepoint=False,  # extraction_ingest is one atomic block (a savepoint here) of its own
    follows_chapter=True,
    reapply=extraction_reapply,
    reapply_orphans=extraction_orphans,
)
def _extraction_ingest(book: Book, payload: Any, e: dict, state: IngestKnown | None = None) -> None:
    extraction_ingest(book=book, number=e["chapter"], payload=payload, journal=False, hooks=False, known=state)


# ── the pending queue ──
_PENDING_PK = "待确认项编号（entity-pending 的 pk）"


def _pending_confirm_door(book: Book, body: Any, *, pk: int) -> dict:
    entity = entity_get(book=book, ref=body.entity) if body.entity else None
    return pending_item_confirm(item=pending_get(book=book, pk=pk), entity=entity)


def _pending_reject_door(book: Book, body: Any, *, pk: int) -> dict:
    return pending_item_reject(item=pending_get(book=book, pk=pk), note=body.note)


@journal_op(
    "pending.confirm",
    service=pending_item_confirm,
    schema="entities.schemas:PendingConfirmIn",
    door=WriteDoor(
        tool="pending-confirm",
        description="确认一个待确认项（先用 entity-pending 列出）：采纳它的写入；entity 可指定一个已有实体（id 或别名）"
        "代替建议的新实体。返回处理结果（pk、kind、entity……）。已处理过的项返回 409。",
        run=_pending_confirm_door,
        response="entities.schemas:ResolutionOut",
        pk=_PENDING_PK,
        order=10,
        path="/entities/pending/{pk}/confirm",
        summary="确认待确认项",
        doc="Confirm a held item and apply its write; ``entity`` picks an existing entity instead of the suggestion.",
        name="pending_confirm",
    ),
)
def _pending_confirm(book: Book, data: Any, e: dict) -> None:
    pending_item_confirm(item=_pending_decided(book, e), entity=_entity(book, e.get("entity")), journal=False)


@journal_op(
    "pending.reject",
    service=pending_item_reject,
    schema="entities.schemas:PendingRejectIn",
    door=WriteDoor(
        tool="pending-reject",
        description="拒绝一个待确认项：什么都不写，之后重新提交该章的抽取也不会再次排队。返回处理结果。",
        run=_pending_reject_door,
        response="entities.schemas:ResolutionOut",
        pk=_PENDING_PK,
        order=20,
        path="/entities/pending/{pk}/reject",
        summary="拒绝待确认项",
        doc="Reject a held item: nothing is written and a re-ingest does not queue it again.",
        name="pending_reject",
    ),
)
def _pending_reject(book: Book, data: Any, e: dict) -> None:
    pending_item_reject(item=_pending_decided(book, e), note=e.get("note", ""), journal=False)


# ── marks: merge, archive, generic aliases, a state change ──
@journal_op("entity.merge", service=entity_merge, schema="entities.schemas:MergeIn")
def _entity_merge(book: Book, data: Any, e: dict) -> None:
    entity_merge(source=_entity(book, e["source"]), target=_entity(book, e["target"]), journal=False)


@journal_op("entities.archive", service=entities_archive)
def _entities_archive(book: Book, data: Any, e: dict) -> None:
    entities_archive(
        entities=Entity.objects.filter(book=book, entity_id__in=e["entities"]), archived=e["archived"], journal=False
    )


@journal_op("aliases.generic", service=aliases_generic_set)
def _aliases_generic(book: Book, data: Any, e: dict) -> None:
    pks = [
        pk
        for entity_id, alias in e["aliases"]
        for pk in Alias.objects.filter(book=book, entity__entity_id=entity_id, alias=alias).values_list("pk", flat=True)
    ]
    aliases_generic_set(aliases=Alias.objects.filter(pk__in=pks), generic=e["generic"], journal=False)


@journal_op("state_change.record", service=state_change_curate)
def _state_change(book: Book, data: Any, e: dict) -> None:
    state_change_curate(
        entity=_entity(book, e["entity"]),
        number=e["chapter"],
        field=e["field"],
        op=e["change"],
        new=e.get("new"),
        old=e.get("old"),
        reason=e.get("reason", ""),
        journal=False,
    )


# ── curation ──
@journal_op("entity.create", service=entity_add)
def _entity_create(book: Book, data: Any, e: dict) -> None:
    entity_add(
        book=book,
        name=e["name"],
        type=e["type"],
        tier=e["tier"],
        description=e.get("description", ""),
        base_state=e.get("base_state") or {},
        is_protagonist=bool(e.get("is_protagonist")),
        entity_id=e["entity"],
        journal=False,
    )


@journal_op("entity.edit", service=entity_edit)
def _entity_edit(book: Book, data: Any, e: dict) -> None:
    entity_edit(entity=_entity(book, e["entity"]), changes=e["changes"], journal=False)


@journal_op("alias.save", service=alias_save)
def _alias_save(book: Book, data: Any, e: dict) -> None:
    alias_save(
        entity=_entity(book, e["entity"]),
        alias=e["alias"],
        valid_from=e.get("valid_from"),
        valid_to=e.get("valid_to"),
        note=e.get("note", ""),
        previous=e.get("previous"),
        journal=False,
    )


@journal_op("alias.delete", service=alias_delete)
def _alias_delete(book: Book, data: Any, e: dict) -> None:
    row = Alias.objects.filter(book=book, entity__entity_id=e["entity"], alias=e["alias"]).first()
    if row is None:
        raise NotFound(f"实体 {e['entity']} 没有别名 '{e['alias']}'", extra={"alias": e["alias"]})
    alias_delete(alias=row, journal=False)


@journal_op("state_change.edit", service=state_change_edit)
def _state_change_edit(book: Book, data: Any, e: dict) -> None:
    state_change_edit(
        change=state_change_find(book=book, key=e["key"]),
        number=e["chapter"],
        field=e["field"],
        op=e["change"],
        new=e.get("new"),
        old=e.get("old"),
        reason=e.get("reason", ""),
        journal=False,
    )


@journal_op("state_change.delete", service=state_change_delete)
def _state_change_delete(book: Book, data: Any, e: dict) -> None:
    state_change_delete(change=state_change_find(book=book, key=e["key"]), journal=False)


# what extraction_reapply applies again over a re-ingested chapter's state changes
_CURATION_REPLAY = {"state_change.edit": _state_change_edit, "state_change.delete": _state_change_delete}


@journal_op("relationship.save", service=relationship_save)
def _relationship_save(book: Book, data: Any, e: dict) -> None:
    relationship_save(
        book=book,
        key=e["key"],
        from_entity=_entity(book, e["from"]),
        to_entity=_entity(book, e["to"]),
        type=e["type"],
        events=e["events"],
        journal=False,
    )


@journal_op("relationship.delete", service=relationship_delete)
def _relationship_delete(book: Book, data: Any, e: dict) -> None:
    relationship_delete(relationship=relationship_find(book=book, key=e["key"]), journal=False)


# ── imports ──
@journal_op("legacy.state.import", service=legacy_state_import, help="旧插件的 state.json（附件）")
def _legacy_import(book: Book, data: Any, e: dict) -> None:
    if not isinstance(data, dict):
        raise InvalidInput(f"{journal_attachment_path(event=e)} 的顶层必须是对象", extra={"path": LOG_PATH})
    legacy_state_import(root=Path(book.root), state=data, book_slug=book.slug, source_path=e["source_path"])


# ── discovery ──
@journal_op("discovery.queue", service=book_discover, help="发现的候选角色进入待确认队列（附件）")
def _discovery_queue(book: Book, data: Any, e: dict) -> None:
    discovery_queue_replay(book=book, items=data)


@journal_op("discovery.merge", service=discovery_merge)
def _discovery_merge(book: Book, data: Any, e: dict) -> None:
    discovery_merge(items=[_pending(book, key) for key in e["items"]], journal=False)


@journal_op("discovery.split", service=discovery_split)
def _discovery_split(book: Book, data: Any, e: dict) -> None:
    discovery_split(item=_pending(book, e["item"]), aliases=e["aliases"], journal=False)
