"""The entity side of importing an old project's ``.webnovel/state.json`` (v5.0 … v6) into the database
(the whole import, book files included, is ``bookfiles.importers.state_project.state_migrate``).

Every top-level key of the input is either mapped onto our models or kept verbatim in the book's
legacy store (``LegacyRecord``), and the summary says which — the old tool silently dropped each
entity's own ``aliases`` and all of ``chapter_meta``. All writes are upserts keyed on the content
(source ``migration``), so running the migration twice changes nothing; a dry run does the same
work inside a transaction that is rolled back, so its summary is exact.
"""

import json
import math
from pathlib import Path
from typing import Any

from django.db.models import Max, Sum

from core.journal import journal_append, journal_lock
from core.models import Book
from entities.generic import alias_is_generic
from entities.mentions import mentions_index
from entities.models import (
    Alias,
    Appearance,
    Entity,
    Extraction,
    LegacyRecord,
    PendingItem,
    Relationship,
    RelationshipEvent,
    StateChange,
)
from entities.selectors import entity_state_as_of
from entities.services.writes import entity_appearance_refresh, relationship_summary_refresh
from entities.state_ops import state_replay
from kernel.exceptions import InvalidInput, NotFound
from kernel.safefs import regular_file_read

STATE_PATH = Path(".webnovel") / "state.json"
SLIM_LIMIT = 5 * 1024
RECENT_DISAMBIGUATION = 10
MARKER = "_migrated"

TYPE_NAMES = {
    "角色": "角色", "character": "角色", "characters": "角色", "char": "角色",
    "地点": "地点", "location": "地点", "locations": "地点", "place": "地点",
    "物品": "物品", "item": "物品", "items": "物品",
    "势力": "势力", "faction": "势力", "factions": "势力",
    "招式": "招式", "skill": "招式", "skills": "招式", "technique": "招式", "techniques": "招式",
}  # fmt: skip
TIER_NAMES = {
    "核心": "核心", "core": "核心", "重要": "重要", "important": "重要",
    "次要": "次要", "minor": "次要", "装饰": "装饰", "decor": "装饰", "decoration": "装饰",
}  # fmt: skip
ENTITY_KEYS = {
    "canonical_name", "name", "tier", "desc", "description", "current", "aliases",
    "first_appearance", "last_appearance", "is_protagonist",
}  # fmt: skip
SLIM_KEYS = ("progress", "protagonist_state", "strand_tracker")
RECONCILE_REASON = "迁移：以 state.json 的 current 为准"


class _Run:
    def __init__(self, book: Book, source_path: str) -> None:
        self.book = book
        self.source_path = source_path
        self.created: dict[str, int] = {}
        self.existing: dict[str, int] = {}
        self.keys: dict[str, dict] = {}
        self.problems: list[str] = []
        self.generic: list[str] = []  # "entity_id:alias" of pronoun / kinship / role aliases kept generic

    def count(self, what: str, created: bool) -> None:
        target = self.created if created else self.existing
        target[what] = target.get(what, 0) + 1

    def keep(self, key: str, value: Any) -> None:
        row = LegacyRecord.objects.filter(book=self.book, key=key).first()
        if row is None:
            LegacyRecord.objects.create(book=self.book, key=key, value=value, source_path=self.source_path)
            self.count("legacy", True)
        elif row.value != value:
            row.value = value
            row.save(update_fields=["value", "updated_at"])
            self.count("legacy", True)
        else:
            self.count("legacy", False)


def _chapter(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _entity(run: _Run, ref: Any) -> Entity | None:
    if not isinstance(ref, str) or not ref:
        return None
    entity = Entity.objects.filter(book=run.book, entity_id=ref).first()
    if entity is not None:
        return entity
    rows = list(Entity.objects.filter(book=run.book, aliases__alias=ref).distinct()[:2])
    rows = rows or list(Entity.objects.filter(book=run.book, canonical_name=ref)[:2])
    return rows[0] if len(rows) == 1 else None


def _alias(run: _Run, entity: Entity, alias: Any, *, note: str = "") -> None:
    generic = False
    if isinstance(alias, dict):
        name = alias.get("alias") or alias.get("name")
        valid_from, valid_to = _chapter(alias.get("from")), _chapter(alias.get("to"))
        note = str(alias.get("note", "")) or note
        generic = alias.get("generic") is True
    else:
        name, valid_from, valid_to = alias, None, None
    if not isinstance(name, str) or not name.strip() or name.strip() == entity.canonical_name:
        return
    name = name.strip()
    # The old plugin imported pronouns and role words (他, 少年, 老者) as plain aliases, crediting
    # every 他 of the book to one character: they come in generic (weak mentions) and are reported.
    if alias_is_generic(name):
        generic = True
    row, created = Alias.objects.get_or_create(
        entity=entity,
        alias=name,
        defaults={
            "book": run.book,
            "valid_from": valid_from,
            "valid_to": valid_to,
            "note": note,
            "source": "migration",
            "generic": generic,
        },
    )
    if generic and not row.generic and row.source == "migration":
        row.generic = True
        row.save(update_fields=["generic"])
        created = True
    if generic and f"{entity.entity_id}:{name}" not in run.generic:
        run.generic.append(f"{entity.entity_id}:{name}")
    run.count("aliases", created)


def _entities_v3(run: _Run, data: Any, fallback_chapter: int) -> dict:
    if not isinstance(data, dict):
        run.keep("entities_v3", data)
        return {"status": "kept", "reason": "不是 {类型: {id: 实体}} 结构"}
    mapped = 0
    pending_current: list[tuple[Entity, dict]] = []
    for type_key, items in data.items():
        type_name = TYPE_NAMES.get(str(type_key).lower()) or TYPE_NAMES.get(str(type_key))
        if type_name is None or not isinstance(items, dict):
            run.keep(f"entities_v3.{type_key}", items)
            run.problems.append(f"entities_v3 中未知的类型 '{type_key}'：原样保留")
            continue
        for entity_id, item in items.items():
            if not isinstance(item, dict):
                run.keep(f"entities_v3.{type_key}.{entity_id}", item)
                continue
            name = str(item.get("canonical_name") or item.get("name") or entity_id)
            tier_raw = item.get("tier")
            tier = TIER_NAMES.get(str(tier_raw).lower(), TIER_NAMES.get(str(tier_raw))) if tier_raw else "装饰"
            entity = Entity.objects.filter(book=run.book, entity_id=entity_id).first()
            if entity is None:
                entity = Entity.objects.create(
                    book=run.book,
                    entity_id=entity_id,
                    type=type_name,
                    canonical_name=name,
                    tier=tier or "装饰",
                    description=str(item.get("desc") or item.get("description") or ""),
                    is_protagonist=bool(item.get("is_protagonist")),
                    source="migration",
                )
                run.count("entities", True)
            else:
                run.count("entities", False)
                if item.get("is_protagonist") and not entity.is_protagonist:
                    Entity.objects.filter(pk=entity.pk).update(is_protagonist=True)
            # v5 kept the display name beside the canonical one (药老 / 药尘): it stays a name of the entity
            display = item.get("name")
            if isinstance(display, str) and display.strip() and display.strip() != entity.canonical_name:
                _alias(run, entity, display, note="迁移：state.json 的 name")
            aliases = item.get("aliases") or []
            for alias in aliases if isinstance(aliases, list) else [aliases]:
                _alias(run, entity, alias)
            for key in ("first_appearance", "last_appearance"):
                chapter = _chapter(item.get(key))
                if chapter is not None:
                    _, created = Appearance.objects.get_or_create(
                        entity=entity,
                        chapter=chapter,
                        source=Appearance.Source.MIGRATION,
                        defaults={"book": run.book, "count": 0},
                    )
                    run.count("appearances", created)
            if isinstance(item.get("current"), dict):
                pending_current.append((entity, item["current"]))
            extras = {k: v for k, v in item.items() if k not in ENTITY_KEYS or (k == "tier" and tier is None)}
            if extras:
                run.keep(f"entities_v3.{type_key}.{entity_id}", extras)
            mapped += 1
    return {"status": "mapped", "entities": mapped, "current": pending_current}


def _current_reconcile(run: _Run, pending: list[tuple[Entity, dict]], fallback_chapter: int) -> int:
    """Make the replayed state equal each entity's migrated ``current``: a migrated entity gets it as
    the base state (un-replayed by its changes); an entity that already existed gets a migration
    change at the last chapter for every field that differs."""
    reconciled = 0
    for entity, current in pending:
        entity.refresh_from_db()
        changes = list(entity.state_changes.order_by("chapter", "seq", "id"))
        if entity.source == "migration":
            base = dict(current)
            for field in {c.field for c in changes}:
                first = next(c for c in changes if c.field == field)
                if first.old is None:
                    base.pop(field, None)
                else:
                    base[field] = first.old
            if base != entity.base_state:
                entity.base_state = base
                entity.save(update_fields=["base_state"])
        replayed = state_replay(entity.base_state, changes)
        if replayed == current:
            continue
        for field in sorted(set(current) | set(replayed)):
            if replayed.get(field) == current.get(field):
                continue
            op = "unset" if field not in current else "set"
            # At the latest chapter we know of, so that as_of before it still shows the history.
            chapter = max([fallback_chapter, *(c.chapter for c in changes if c.reason != RECONCILE_REASON)])
            _state_change(run, entity, chapter, field, op, replayed.get(field), current.get(field),
                          RECONCILE_REASON)  # fmt: skip
        reconciled += 1
    return reconciled


def _state_change(run: _Run, entity: Entity, number: int, field: str, op: str, old: Any, new: Any, reason: str) -> None:
    existing = StateChange.objects.filter(
        entity=entity, chapter=number, field=field, op=op, source=StateChange.Source.MIGRATION
    )
    if any(row.new == new and row.old == old for row in existing):
        run.count("state_changes", False)
        return
    seq = (StateChange.objects.filter(entity=entity, chapter=number).aggregate(m=Max("seq"))["m"] or 0) + 1
    StateChange.objects.create(
        book=run.book, entity=entity, chapter=number, seq=seq, field=field, op=op, old=old, new=new,
        reason=reason, source=StateChange.Source.MIGRATION,
    )  # fmt: skip
    run.count("state_changes", True)


def _alias_index(run: _Run, data: Any) -> dict:
    if not isinstance(data, dict):
        run.keep("alias_index", data)
        return {"status": "kept"}
    unresolved = {}
    for alias, targets in data.items():
        targets = targets if isinstance(targets, list) else [targets]
        missing = []
        for target in targets:
            ref = target.get("id") if isinstance(target, dict) else target
            entity = Entity.objects.filter(book=run.book, entity_id=ref).first() if isinstance(ref, str) else None
            if entity is None:
                missing.append(target)
                continue
            _alias(run, entity, alias)
        if missing:
            unresolved[alias] = missing
    if unresolved:
        run.keep("alias_index.unresolved", unresolved)
        run.problems.append(f"alias_index 中 {len(unresolved)} 个别名指向不存在的实体：原样保留")
    return {"status": "mapped", "aliases": len(data), "unresolved": len(unresolved)}


def _state_changes(run: _Run, data: Any) -> dict:
    if not isinstance(data, list):
        run.keep("state_changes", data)
        return {"status": "kept"}
    unmapped = []
    for item in data:
        entity = _entity(run, item.get("entity_id") if isinstance(item, dict) else None)
        chapter = _chapter(item.get("chapter")) if isinstance(item, dict) else None
        field = item.get("field") if isinstance(item, dict) else None
        if entity is None or chapter is None or not isinstance(field, str) or not field:
            unmapped.append(item)
            continue
        old = item.get("old", item.get("old_value"))
        new = item.get("new", item.get("new_value"))
        op = item.get("op") or ("unset" if new is None and "new" not in item and "new_value" not in item else "set")
        _state_change(run, entity, chapter, field, op, old, new, str(item.get("reason") or ""))
    if unmapped:
        run.keep("state_changes.unmapped", unmapped)
        run.problems.append(f"state_changes 中 {len(unmapped)} 条无法对应实体或章节：原样保留")
    return {"status": "mapped", "rows": len(data), "unmapped": len(unmapped)}


def _relationship(run: _Run, src: Entity, dst: Entity, type_: str, description: str, number: int | None) -> None:
    rel, _ = Relationship.objects.get_or_create(from_entity=src, to_entity=dst, type=type_, defaults={"book": run.book})
    event, created = RelationshipEvent.objects.get_or_create(
        relationship=rel, chapter=number, description=description, source=RelationshipEvent.Source.MIGRATION
    )
    run.count("relationships", created)
    if created:
        relationship_summary_refresh(relationship_pks=[rel.pk])


def _structured_relationships(run: _Run, data: Any) -> dict:
    if not isinstance(data, list):
        run.keep("structured_relationships", data)
        return {"status": "kept"}
    unmapped = []
    for item in data:
        if not isinstance(item, dict):
            unmapped.append(item)
            continue
        src = _entity(run, item.get("from_entity", item.get("from")))
        dst = _entity(run, item.get("to_entity", item.get("to")))
        type_ = item.get("type")
        if src is None or dst is None or not isinstance(type_, str) or not type_.strip():
            unmapped.append(item)
            continue
        _relationship(run, src, dst, type_.strip(), str(item.get("description") or ""), _chapter(item.get("chapter")))
    if unmapped:
        run.keep("structured_relationships.unmapped", unmapped)
        run.problems.append(f"structured_relationships 中 {len(unmapped)} 条无法对应实体：原样保留")
    return {"status": "mapped", "rows": len(data), "unmapped": len(unmapped)}


def _relationships_dict(run: _Run, data: Any) -> dict:
    """The old free-form ``relationships`` dict: {from: {to: type | {type, description, chapter}}}.
    What resolves is mapped; the whole dict is also kept verbatim (its shape varied between versions)."""
    run.keep("relationships", data)
    mapped = 0
    if isinstance(data, dict):
        for from_ref, targets in data.items():
            src = _entity(run, from_ref)
            if src is None or not isinstance(targets, dict):
                continue
            for to_ref, value in targets.items():
                dst = _entity(run, to_ref)
                if dst is None:
                    continue
                if isinstance(value, str) and value.strip():
                    _relationship(run, src, dst, value.strip(), "", None)
                    mapped += 1
                elif isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"].strip():
                    _relationship(
                        run, src, dst, value["type"].strip(), str(value.get("description") or ""),
                        _chapter(value.get("chapter")),
                    )  # fmt: skip
                    mapped += 1
    return {"status": "mapped+kept", "mapped": mapped}


def _chapter_meta(run: _Run, data: Any) -> dict:
    if not isinstance(data, dict):
        run.keep("chapter_meta", data)
        return {"status": "kept"}
    bad = {}
    for key, meta in data.items():
        chapter = _chapter(key)
        if chapter is None or not isinstance(meta, dict):
            bad[key] = meta
            continue
        row = Extraction.objects.filter(book=run.book, chapter=chapter).first()
        if row is None:
            Extraction.objects.create(
                book=run.book,
                chapter=chapter,
                chapter_meta=meta,
                summary={"migrated_chapter_meta": meta},
                source="migration",
            )
            run.count("chapter_meta", True)
        elif row.summary.get("migrated_chapter_meta") == meta:
            run.count("chapter_meta", False)
        else:
            # The agent's own chapter_meta (if the chapter was ingested already) wins over migrated keys.
            agent = row.chapter_meta if row.source != "migration" else {}
            row.chapter_meta = {**meta, **agent}
            row.summary = {**row.summary, "migrated_chapter_meta": meta}
            row.save(update_fields=["chapter_meta", "summary", "updated_at"])
            run.count("chapter_meta", True)
    if bad:
        run.keep("chapter_meta.unmapped", bad)
    return {"status": "mapped", "chapters": len(data) - len(bad), "unmapped": len(bad)}


def _disambiguation(run: _Run, key: str, data: Any) -> dict:
    if not isinstance(data, list):
        run.keep(key, data)
        return {"status": "kept"}
    for item in data:
        payload = item if isinstance(item, dict) else {"value": item}
        exists = any(
            p.payload == payload
            for p in PendingItem.objects.filter(book=run.book, kind=PendingItem.Kind.DISAMBIGUATION, source="migration")
        )
        if exists:
            run.count("pending", False)
            continue
        confidence = payload.get("confidence")
        PendingItem.objects.create(
            book=run.book,
            chapter=_chapter(payload.get("chapter")),
            kind=PendingItem.Kind.DISAMBIGUATION,
            payload=payload,
            confidence=float(confidence) if isinstance(confidence, int | float) else None,
            note=f"迁移自 state.json 的 {key}",
            source="migration",
        )
        run.count("pending", True)
    return {"status": "mapped", "rows": len(data)}


def _progress_chapter(state: dict) -> int:
    progress = state.get("progress")
    if isinstance(progress, dict):
        for key in ("current_chapter", "chapter", "last_chapter", "latest_chapter"):
            chapter = _chapter(progress.get(key))
            if chapter is not None:
                return chapter
    return 0


def _version(state: dict) -> str:
    for key in ("version", "schema_version", "state_version"):
        if isinstance(state.get(key), str | int | float):
            return str(state[key])
    newer = {"progress", "protagonist_state", "strand_tracker", "plot_threads", "chapter_meta"}
    return "5.1+" if newer & set(state) else "5.0"


def slim_state(*, state: dict, marker: dict | None = None) -> dict:
    """The slim state.json: progress, protagonist_state, strand_tracker and the most recent
    disambiguation records, trimmed until it fits in 5 KB."""
    for recent in (RECENT_DISAMBIGUATION, 5, 2, 0):
        slim: dict[str, Any] = {}
        if marker:
            slim[MARKER] = marker
        for key in SLIM_KEYS:
            if key in state:
                slim[key] = state[key]
        for key in ("disambiguation_warnings", "disambiguation_pending"):
            if isinstance(state.get(key), list):
                slim[key] = state[key][-recent:] if recent else []
        if len(json.dumps(slim, ensure_ascii=False, indent=2).encode("utf-8")) < SLIM_LIMIT:
            return slim
    return slim


def _book_for(root: Path, slug: str | None) -> tuple[Book, bool]:
    if slug:
        book = Book.objects.filter(slug=slug).first()
        if book is None:
            raise NotFound(f"书籍 '{slug}' 不存在", extra={"book": slug})
        return book, False
    book = Book.objects.filter(root=str(root)).first()
    if book is not None:
        return book, False
    return Book.objects.create(slug=root.name, title=root.name, root=str(root)), True


STATE_MAX_BYTES = 64 * 1024 * 1024
STATE_MAX_DEPTH = 100
STATE_INT_MAX = 2**63 - 1  # what every integer column holds; a 5,000-digit number is no chapter


def _json_constant(name: str) -> Any:
    raise ValueError(f"不支持 {name}（不是有效的 JSON 数值）")


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"数值 {text[:30]} 超出范围")
    return value


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(int(text)) > STATE_INT_MAX:
        raise ValueError(f"整数 {text[:30]}{'…' if len(text) > 30 else ''} 超出 64 位范围")
    return int(text)


def _state_values_check(data: Any, path: Path) -> None:
    """Refuse, at the boundary, what later code cannot store: nesting past ``STATE_MAX_DEPTH``, NUL
    characters (PostgreSQL text) and lone surrogates such as ``"\\ud800"`` (not encodable as UTF-8),
    naming the JSON path."""
    stack: list[tuple[Any, str, int]] = [(data, "$", 1)]
    while stack:
        value, where, depth = stack.pop()
        if depth > STATE_MAX_DEPTH:
            raise InvalidInput(
                f"{path} 嵌套超过 {STATE_MAX_DEPTH} 层（{where}）", extra={"path": str(path), "at": where}
            )
        if isinstance(value, dict):
            for key, item in value.items():
                stack.append((key, f"{where} 的键", depth + 1))
                stack.append((item, f"{where}.{key}", depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            if "\x00" in value:
                raise InvalidInput(f"{path} 的 {where} 含 NUL 字符", extra={"path": str(path), "at": where})
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInput(
                    f"{path} 的 {where} 含无效的 Unicode 代理字符（如 \\ud800）", extra={"path": str(path), "at": where}
                ) from None


def state_file_read(*, path: Path) -> dict:
    """state.json as a dict. Only a regular file is read, at most ``STATE_MAX_BYTES``; not UTF-8, not
    JSON, NaN / Infinity, integers past 64 bits, deep nesting, NUL and lone surrogates are each a clear
    ``InvalidInput`` with the line or JSON path, never an exception from deeper down."""
    try:
        raw, _mtime = regular_file_read(path, max_bytes=STATE_MAX_BYTES)
    except FileNotFoundError:
        raise NotFound(f"找不到 {path}", extra={"path": str(path)}) from None
    except OSError as exc:
        raise InvalidInput(f"无法读取 {path}：{exc.strerror or exc}", extra={"path": str(path)}) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InvalidInput(f"{path} 第 {line} 行不是 UTF-8 编码", extra={"path": str(path), "line": line}) from None
    try:
        data = json.loads(text, parse_constant=_json_constant, parse_int=_json_int, parse_float=_json_float)
    except FileNotFoundError:
        raise NotFound(f"找不到 {path}", extra={"path": str(path)}) from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path} 不是有效的 JSON（第 {exc.lineno} 行第 {exc.colno} 列）", extra={"path": str(path)}
        ) from exc
    except ValueError as exc:
        raise InvalidInput(f"{path}：{exc}", extra={"path": str(path)}) from None
    except RecursionError:
        raise InvalidInput(f"{path} 嵌套过深", extra={"path": str(path)}) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} 的顶层必须是对象", extra={"path": str(path)})
    _state_values_check(data, path)
    return data


def legacy_state_import(
    *, root: Path, state: dict, book_slug: str | None, source_path: str, journal: bool = False
) -> dict:
    """Import an old state.json (already read) into the book's tables; returns the summary.

    Runs in the caller's transaction (the dry run rolls it back). With ``journal`` (the committed
    migration) an import that changed something is journaled (``legacy.state.import``, the state as
    read kept beside the log), so a rebuild into an empty database brings its rows back."""
    book, book_created = _book_for(root, book_slug)
    journal_lock(book=book, heal=journal)
    run = _Run(book, source_path)
    fallback_chapter = _progress_chapter(state)
    keys: dict[str, dict] = {}
    current_pending: list = []
    # Entities first: every other key refers to them.
    if "entities_v3" in state:
        result = _entities_v3(run, state["entities_v3"], fallback_chapter)
        current_pending = result.pop("current", [])
        keys["entities_v3"] = result
    handlers = {
        "alias_index": lambda v: _alias_index(run, v),
        "state_changes": lambda v: _state_changes(run, v),
        "structured_relationships": lambda v: _structured_relationships(run, v),
        "relationships": lambda v: _relationships_dict(run, v),
        "chapter_meta": lambda v: _chapter_meta(run, v),
        "disambiguation_warnings": lambda v: _disambiguation(run, "disambiguation_warnings", v),
        "disambiguation_pending": lambda v: _disambiguation(run, "disambiguation_pending", v),
    }
    for key, value in state.items():
        if key == "entities_v3":
            continue
        if key in handlers:
            keys[key] = handlers[key](value)
        elif key in SLIM_KEYS:
            run.keep(key, value)
            keys[key] = {"status": "kept", "also": "瘦身后的 state.json"}
        else:
            run.keep(key, value)
            keys[key] = {"status": "kept"}
    if current_pending:
        keys["entities_v3"]["current_reconciled"] = _current_reconcile(run, current_pending, fallback_chapter)
    if run.generic:
        shown = "、".join(a.split(":", 1)[1] for a in run.generic[:10])
        run.problems.append(
            f"{len(run.generic)} 个别名是代词或泛称（{shown}{'…' if len(run.generic) > 10 else ''}）："
            "按泛称导入（弱提及，不计出场），见 generic_aliases"
        )
    if run.created:
        # the new names, in the chapters already there (none yet when the book files are written after,
        # as migrate_state does: the rebuild that follows scans them; a replay of the journal, here)
        mentions_index(book=book, numbers=None)
    entity_appearance_refresh(entity_pks=Entity.objects.filter(book=book).values_list("pk", flat=True))
    if journal and run.created:
        journal_append(
            book=book, op="legacy.state.import", attachment=("imports/state", state), source_path=source_path
        )
    return {
        "book": book.slug,
        "book_created": book_created,
        "state_file": source_path,
        "version": _version(state),
        "keys": keys,
        "created": run.created,
        "unchanged": run.existing,
        "problems": run.problems,
        "generic_aliases": run.generic,
        "changed": bool(run.created) or book_created,
    }


def state_export(*, book: Book) -> dict:
    """The slim state.json of a book, from the database: progress (current chapter and words over
    the migrated progress), the protagonist's replayed state, the strand tracker, and the most
    recent disambiguation records (extraction warnings and pending mentions)."""
    legacy = {r.key: r.value for r in LegacyRecord.objects.filter(book=book, key__in=SLIM_KEYS)}
    state: dict[str, Any] = {}
    progress = dict(legacy.get("progress") or {}) if isinstance(legacy.get("progress"), dict) else {}
    agg = book.chapters.aggregate(current=Max("number"), words=Sum("word_count"))
    if agg["current"] is not None:
        progress.update({"current_chapter": agg["current"], "total_words": agg["words"] or 0})
    state["progress"] = progress
    protagonist = Entity.objects.filter(book=book, is_protagonist=True).order_by("entity_id").first()
    ps = dict(legacy.get("protagonist_state") or {}) if isinstance(legacy.get("protagonist_state"), dict) else {}
    if protagonist is not None:
        ps.update({"id": protagonist.entity_id, "name": protagonist.canonical_name})
        ps.update(entity_state_as_of(entity=protagonist))
    state["protagonist_state"] = ps
    state["strand_tracker"] = legacy.get("strand_tracker", {})
    warnings = []
    for row in Extraction.objects.filter(book=book).exclude(warnings=[]).order_by("-chapter")[:RECENT_DISAMBIGUATION]:
        warnings[:0] = [{"chapter": row.chapter, **w} for w in row.warnings]
    pending = [
        {"chapter": p.chapter, "kind": p.kind, "confidence": p.confidence, **p.payload}
        for p in PendingItem.objects.filter(
            book=book,
            status=PendingItem.Status.PENDING,
            kind__in=[PendingItem.Kind.UNCERTAIN, PendingItem.Kind.DISAMBIGUATION],
        ).order_by("-id")[:RECENT_DISAMBIGUATION]
    ][::-1]
    state["disambiguation_warnings"] = warnings[-RECENT_DISAMBIGUATION:]
    state["disambiguation_pending"] = pending
    return slim_state(state=state)
