"""Pending items and ambiguous mentions as a curator reads them: sentences with names, not ids.

「沈墨 的 势力 → 幽冥殿，置信度 0.45，来自第8章抽取」. The names of every entity id a page of items
mentions are read in one query (``entity_names``) and passed in, so a list page costs one query more.
"""

from collections.abc import Iterable
from typing import Any

from entities.models import Entity, PendingItem
from entities.state_labels import state_field_label

SOURCE_NAMES = {
    "extraction": "抽取",
    "migration": "迁移",
    "discovery": "发现",
    "curation": "人工校订",
    "file": "书籍文件",
    "tag": "手工标签",
    "scan": "正文扫描",
    "admin": "后台",
}
OP_WORDS = {"set": "→", "unset": "清除", "add": "加入", "remove": "移除", "inc": "增加"}


def _ids_in(payload: dict[str, Any]) -> set[str]:
    ids = {payload.get(k) for k in ("entity_id", "id", "from", "to", "adopted", "suggested_id")}
    ids.update(c for c in payload.get("candidates") or [] if isinstance(c, str))
    return {i for i in ids if isinstance(i, str) and i}


def entity_names(*, book_ids: Iterable[int], payloads: Iterable[dict[str, Any]]) -> dict[tuple[int, str], str]:
    """{(book id, entity id): canonical name} for every entity id the payloads name, in one query."""
    wanted: set[str] = set()
    for payload in payloads:
        if isinstance(payload, dict):
            wanted |= _ids_in(payload)
    if not wanted:
        return {}
    rows = Entity.objects.filter(book_id__in=set(book_ids), entity_id__in=wanted)
    return {(b, e): n for b, e, n in rows.values_list("book_id", "entity_id", "canonical_name")}


def _value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "、".join(_value(v) for v in value) or "（空）"
    if isinstance(value, dict):
        return "；".join(f"{k}：{_value(v)}" for k, v in value.items())
    if value is None:
        return "—"
    return str(value)


def _name(names: dict[tuple[int, str], str], book_id: int, ref: Any) -> str:
    if not isinstance(ref, str) or not ref:
        return "？"
    return names.get((book_id, ref), ref)


def candidates_text(*, book_id: int, candidates: Iterable[Any], names: dict[tuple[int, str], str]) -> str:
    """Candidate ids as names joined with 、 (an id without an entity stays as written)."""
    return "、".join(_name(names, book_id, c) for c in candidates) or "无"


def pending_sentence(item: PendingItem, names: dict[tuple[int, str], str]) -> str:
    """What the held write would do, then its confidence and where it came from."""
    p = item.payload if isinstance(item.payload, dict) else {"value": item.payload}
    b = item.book_id
    kind = item.kind
    if kind == PendingItem.Kind.STATE_CHANGE:
        op = p.get("op") or "set"
        word = OP_WORDS.get(op, op)
        tail = "" if op == "unset" else f" {_value(p.get('new'))}"
        text = f"{_name(names, b, p.get('entity_id'))} 的 {state_field_label(str(p.get('field', '')))} {word}{tail}"
    elif kind == PendingItem.Kind.RELATIONSHIP:
        text = f"{_name(names, b, p.get('from'))} —{p.get('type', '')}→ {_name(names, b, p.get('to'))}"
        if p.get("description"):
            text += f"（{p['description']}）"
    elif kind == PendingItem.Kind.ENTITY_NEW:
        text = f"新{p.get('type', '实体')}「{p.get('name', '')}」"
        if p.get("desc"):
            text += f"：{p['desc']}"
    elif kind == PendingItem.Kind.ENTITY_APPEARED:
        text = f"{_name(names, b, p.get('id'))} 出场"
    elif kind == PendingItem.Kind.ENTITY_DISCOVERED:
        count = (p.get("evidence") or {}).get("count") if isinstance(p.get("evidence"), dict) else None
        text = f"发现{p.get('type', '实体')}「{p.get('name', '')}」" + (f"，出现 {count} 次" if count else "")
        aliases = [a.get("alias") for a in p.get("aliases") or [] if isinstance(a, dict) and a.get("alias")]
        if aliases:
            text += f"，别名 {'、'.join(aliases[:5])}"
    elif kind in (PendingItem.Kind.UNCERTAIN, PendingItem.Kind.DISAMBIGUATION) and "mention" in p:
        cands = candidates_text(book_id=b, candidates=p.get("candidates") or [], names=names)
        text = f"「{p['mention']}」指代不确定，候选：{cands}"
    else:
        text = item.note or _value(p)[:80]
    parts = [text]
    if item.confidence is not None:
        parts.append(f"置信度 {item.confidence:.2f}")
    source = SOURCE_NAMES.get(item.source, item.source)
    parts.append(f"来自第{item.chapter}章{source}" if item.chapter else f"来自{source}")
    return "，".join(parts)
