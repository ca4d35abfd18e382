"""Writes of discovery: proposals into the pending queue, and a curator's decisions back into the book
folder — a confirmed proposal becomes an entry of ``设定/名册.yaml``, a rejected one a line of
``设定/.discovery-rejected.yaml`` — so the folder stays the truth and a rebuild loses nothing.

The queue itself is journaled (``discovery.queue``, the queued proposals as the attachment;
``discovery.merge`` / ``discovery.split``; the decisions are ``pending.confirm`` / ``pending.reject``):
a rebuild into an empty database gives back the proposals, their merges and splits and every decision
(a confirm as an existing entity adds its names as that entity's aliases again). Journaled rather than
regenerated from the text: discovery reads the whole book (a minute for a long novel) and its engine
changes, so proposals found again need not be the ones a curator decided on.

The roster is edited line by line, never re-dumped: an author's comments, key order and quoting
survive (a PyYAML round trip would drop every comment). The new entry goes at the end of its type's
section (or a new section at the end of the file), and the result is parsed again before it is
written; a roster this cannot edit safely is refused with a clear message and left as it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from django.db import transaction
from django.utils import timezone

from core.journal import journal_append, journal_lock
from core.lazybuild import book_files_reread, book_files_writing
from core.models import Book, Chapter
from entities.discovery.bounds import MAX_CHAPTER_CHARS, MAX_CHARS
from entities.discovery.engine import TYPES, Proposal, Segmenter, discover
from entities.models import Alias, Entity, PendingItem
from kernel.exceptions import Conflict, InvalidInput
from kernel.safefs import book_file_write

ROSTER = "设定/名册.yaml"
REJECTED = "设定/.discovery-rejected.yaml"
CARDS = "设定/角色"
SOURCE = "discovery"
# Below this a proposal is reported but not queued (mostly segmentation noise); the queue is ordered by
# confidence, lowest first, like held extraction items.
QUEUE_FLOOR = 0.3
HIGH, LOW = 0.8, 0.5
KIND = PendingItem.Kind.ENTITY_DISCOVERED


def _band(confidence: float) -> str:
    return "高" if confidence > HIGH else "中" if confidence >= LOW else "低"


def rejected_read(*, root: Path) -> list[dict]:
    """The rejections recorded in the book folder (``[]`` when there are none)."""
    path = Path(root) / REJECTED
    if not path.is_file():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{REJECTED} 解析失败：{exc}", extra={"file": REJECTED}) from None
    items = data.get("rejected") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise InvalidInput(f"{REJECTED} 必须是 rejected: [条目…] 的映射", extra={"file": REJECTED})
    return [i for i in items if isinstance(i, dict) and isinstance(i.get("name"), str)]


def _known_names(book: Book) -> dict[str, set[str]]:
    """Names that are no longer news, by type: entities and their aliases, proposals already queued or
    confirmed, and every name of a rejected proposal."""
    known: dict[str, set[str]] = {t: set() for t in TYPES}
    for type_name, name in Entity.objects.filter(book=book).values_list("type", "canonical_name"):
        known.setdefault(type_name, set()).add(name)
    for type_name, alias in Alias.objects.filter(book=book).values_list("entity__type", "alias"):
        known.setdefault(type_name, set()).add(alias)
    # Every proposal ever queued (pending, confirmed, rejected, merged away): its names are not news.
    items = PendingItem.objects.filter(book=book, kind=KIND)
    for payload in items.values_list("payload", flat=True):
        known.setdefault(payload.get("type", "角色"), set()).update(_payload_names(payload))
    for entry in rejected_read(root=Path(book.root)):
        known.setdefault(entry.get("type", "角色"), set()).update(
            [entry["name"], *(a for a in entry.get("aliases", []) if isinstance(a, str))]
        )
    return known


def _payload_names(payload: dict) -> list[str]:
    return [payload.get("name", ""), *(a.get("alias", "") for a in payload.get("aliases", []))]


def book_discover(
    *,
    book: Book,
    min_count: int = 5,
    types: Iterable[str] = TYPES,
    segment: Segmenter | None = None,
    limit: int = 200,
    max_chars: int = MAX_CHARS,
) -> dict[str, Any]:
    """Discover the cast from the book's chapters and queue what is new (``entity_discovered`` items).

    A proposal is skipped when its name is already an entity or alias of its type, queued, confirmed or
    rejected; its aliases that are known already are dropped from it. Returns counts and the queued
    proposals, and ``bounds``: how much of the text was read (at most ``max_chars`` characters, the
    REST door less than the command line) and how many pieces were no language."""
    types = list(types)
    unknown = [t for t in types if t not in TYPES]
    if unknown:
        raise InvalidInput(
            f"types: 不支持的类型 {'、'.join(unknown)}，可选 {'/'.join(TYPES)}", extra={"types": unknown}
        )
    if min_count < 1:
        raise InvalidInput("min_count 必须 ≥ 1", extra={"min_count": min_count})
    chapters = list(Chapter.objects.filter(book=book).order_by("number").values_list("number", "body"))
    if not chapters:
        raise InvalidInput(f"《{book.slug}》没有章节：先 rebuild 书籍文件夹", extra={"book": book.slug})
    # The text pass (a minute for a long novel) runs outside any transaction: on SQLite an open write
    # transaction would hold every other writer of the database for that long.
    bounds: dict[str, Any] = {}
    proposals = discover(
        chapters, min_count=min_count, types=types, segment=segment, limit=limit, max_chars=max_chars, bounds=bounds
    )
    bounds = _bounds_report(bounds, max_chars)
    return {
        "book": book.slug,
        "chapters": len(chapters),
        **_proposals_queue(book=book, proposals=proposals),
        "bounds": bounds,
    }


def _bounds_report(note: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """The engine's bounds note as the report gives it: what was read, what was skipped and why."""
    cut = [{"chapter": n, "chars": chars, "read": read} for n, chars, read in note.get("cut", [])]
    bounds = {"chars": note["chars"], "read": note["read"], "unlexical": note.get("unlexical", 0), "cut": cut}
    said = [
        f"第 {c['chapter']} 章共 {c['chars']} 字，超过单章上限 {MAX_CHAPTER_CHARS} 字：只读了前 {c['read']} 字"
        for c in cut[:5]
    ] + ([f"另有 {len(cut) - 5} 章同样只读了一部分"] if len(cut) > 5 else [])
    if note["read"] + sum(c["chars"] - c["read"] for c in cut) < note["chars"]:
        said.append(
            f"正文共 {note['chars']} 字，超过本次上限 {max_chars} 字：只读了前 {note['read']} 字"
            "（命令行 manage.py discover 的上限更高）"
        )
    if said:
        bounds["note"] = "；".join(said)
    return bounds


def _item_key(item: PendingItem) -> dict[str, Any]:
    """A queued proposal's stable identity in the journal (as ``entities.services.pending.pending_item_key``)."""
    return {"chapter": item.chapter, "kind": item.kind, "payload": item.payload}


def discovery_queue_replay(*, book: Book, items: list[dict[str, Any]]) -> int:
    """The journal's ``discovery.queue``: the proposals queued, as they were queued (a rebuild's replay)."""
    if not isinstance(items, list):
        raise TypeError("discovery.queue 的附件应是列表")
    for row in items:
        PendingItem.objects.create(
            book=book,
            chapter=row["chapter"],
            kind=KIND,
            payload=row["payload"],
            confidence=row["confidence"],
            source=SOURCE,
            note=row.get("note", ""),
        )
    return len(items)


@transaction.atomic
def _proposals_queue(*, book: Book, proposals: list[Proposal]) -> dict[str, Any]:
    journal_lock(book=book)
    known = _known_names(book)
    queued: list[dict] = []
    journaled: list[dict] = []
    counts = {"proposed": len(proposals), "queued": 0, "known": 0, "below_floor": 0}
    for proposal in proposals:
        seen = known.setdefault(proposal.type, set())
        if proposal.name in seen:
            counts["known"] += 1
            continue
        proposal.aliases = [a for a in proposal.aliases if a.alias not in seen]
        if proposal.confidence < QUEUE_FLOOR:
            counts["below_floor"] += 1
            continue
        payload = proposal.as_dict() | {"band": _band(proposal.confidence)}
        item = PendingItem.objects.create(
            book=book,
            chapter=proposal.first_chapter,
            kind=KIND,
            payload=payload,
            confidence=proposal.confidence,
            source=SOURCE,
            note=f"{proposal.type}「{proposal.name}」出现 {proposal.count} 次",
        )
        seen.update(proposal.names())
        queued.append({"pk": item.pk, **payload})
        journaled.append(
            {"chapter": item.chapter, "payload": payload, "confidence": item.confidence, "note": item.note}
        )
    counts["queued"] = len(queued)
    if journaled:
        journal_append(book=book, op="discovery.queue", attachment=("discovery/queue", journaled))
    return {"counts": counts, "queued": queued}


# --- the roster file -----------------------------------------------------------------------------

# libyaml's safe loader when PyYAML has it (the parser's, bookfiles/parser/markup.py): a roster of
# hundreds of entries is read twice per confirm
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# a top-level key: not a comment, and not an item of a list written at the keys' own indent (``- name: …``)
_TOP_KEY = re.compile(r"^(?!-(?:\s|$))(?P<key>[^\s#:][^:#]*):(?:\s|$)")


def _yaml_scalar(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def roster_entry_lines(*, payload: dict, indent: str) -> list[str]:
    """The YAML lines of one roster item for a proposal (generic aliases as ``{alias: …, generic: true}``)."""
    aliases = []
    for alias in payload.get("aliases", []):
        if alias.get("generic"):
            aliases.append(f"{{alias: {_yaml_scalar(alias['alias'])}, generic: true}}")
        else:
            aliases.append(_yaml_scalar(alias["alias"]))
    lines = [f"{indent}- name: {_yaml_scalar(payload['name'])}"]
    if aliases:
        lines.append(f"{indent}  aliases: [{', '.join(aliases)}]")
    return lines


def roster_add(*, text: str, payload: dict) -> tuple[str, bool]:
    """``text`` with the proposal added to its type's section; ``(text, False)`` when the roster holds
    that name already. Raises ``InvalidInput`` when the roster is not valid YAML."""
    type_name, name = payload["type"], payload["name"]
    try:
        data = yaml.load(text, Loader=_LOADER) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{ROSTER} 解析失败，未写入：{exc}", extra={"file": ROSTER}) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidInput(f"{ROSTER} 必须是「类型: 条目列表」的映射，未写入", extra={"file": ROSTER})
    section = data.get(type_name) or []
    if any(isinstance(i, dict) and i.get("name") == name for i in section):
        return text, False
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if (m := _TOP_KEY.match(line)) and m["key"] == type_name), None)
    if start is None:
        tail = [] if not lines or not lines[-1].strip() else [""]
        new = lines + tail + [f"{type_name}:", *roster_entry_lines(payload=payload, indent="  ")]
    else:
        if lines[start].split(":", 1)[1].strip() not in ("", "[]", "null", "~"):
            raise InvalidInput(
                f"{ROSTER} 第{start + 1}行：「{type_name}:」写在同一行（流式列表），无法安全追加，请改为逐行列表",
                extra={"file": ROSTER, "line": start + 1},
            )
        if lines[start].split(":", 1)[1].strip() in ("[]", "null", "~"):
            lines[start] = f"{type_name}:"
        end = next((i for i in range(start + 1, len(lines)) if _TOP_KEY.match(lines[i])), len(lines))
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        item_line = next((line for line in lines[start + 1 : end] if line.lstrip().startswith("- ")), "  - ")
        indent = item_line[: len(item_line) - len(item_line.lstrip())]
        new = lines[:end] + roster_entry_lines(payload=payload, indent=indent) + lines[end:]
    result = "\n".join(new) + "\n"
    try:
        check = yaml.load(result, Loader=_LOADER)
    except yaml.YAMLError:
        check = None
    if not isinstance(check, dict) or not any(
        isinstance(i, dict) and i.get("name") == name for i in check.get(type_name) or []
    ):
        raise InvalidInput(f"{ROSTER} 的格式无法安全追加「{name}」，未写入", extra={"file": ROSTER})
    return result, True


def _card_exists(root: Path, name: str) -> bool:
    return (root / CARDS / f"{name}.md").is_file()


def discovery_confirm(*, item: PendingItem, write: bool = True) -> dict[str, Any]:
    """Apply a confirmed proposal: its entry is added to ``设定/名册.yaml`` (kept as it was when the name
    is there already, or has a character card), and loaded at once as a sync would (its entity, aliases and
    mentions scanned), so the live database answers what a rebuild of the folder does.
    Called by ``pending_item_confirm`` inside its transaction (which, given an entity, adds the names as
    that entity's aliases instead). ``write=False`` (a replay: the roster is the author's file now, as
    they left it) answers the same without writing."""
    payload = item.payload
    root = Path(item.book.root)
    if payload.get("type") == "角色" and _card_exists(root, payload["name"]):
        return {"roster": None, "added": False, "note": f"已有角色卡 {CARDS}/{payload['name']}.md，名册未改动"}
    path = root / ROSTER
    existed = path.is_file()
    text = path.read_text(encoding="utf-8-sig") if existed else ""
    new_text, added = roster_add(text=text, payload=payload)
    if added and write:
        book_files_writing(book=item.book, paths=[ROSTER])  # a writer killed before its commit: the heal re-reads it
        book_file_write(root=root, relative=ROSTER, text=new_text)
        # the live database follows the folder now, as a rebuild of it would (not at the next sync);
        # a roster that cannot be loaded is put back as it was (the confirm is undone with it)
        try:
            book_files_reread(book=item.book, paths=[ROSTER])
        except BaseException:
            if existed:
                book_file_write(root=root, relative=ROSTER, text=text)
            else:
                path.unlink(missing_ok=True)
            raise
    return {"roster": ROSTER, "added": added, "name": payload["name"], "next": "已载入名册并扫描提及"}


def discovery_names(*, item: PendingItem) -> list[dict]:
    """A proposal's names as alias records (name first), for confirming it as an existing entity."""
    payload = item.payload
    return [{"alias": payload["name"], "generic": False}] + [
        {"alias": a["alias"], "generic": bool(a.get("generic"))} for a in payload.get("aliases", [])
    ]


def discovery_reject_record(*, item: PendingItem, note: str = "") -> None:
    """Record a rejected proposal in ``设定/.discovery-rejected.yaml`` so no later discovery (and no
    rebuild from an empty database) proposes it again."""
    root = Path(item.book.root)
    entries = rejected_read(root=root)
    payload = item.payload
    if any(e["name"] == payload["name"] and e.get("type", "角色") == payload["type"] for e in entries):
        return
    entries.append(
        {
            "type": payload["type"],
            "name": payload["name"],
            "aliases": [a["alias"] for a in payload.get("aliases", [])],
            "at": timezone.now().date().isoformat(),
            **({"note": note} if note else {}),
        }
    )
    header = "# 发现（discover）被拒绝的提议：再次发现时不会重复提出。可手工删除条目以撤销。\n"
    body = yaml.safe_dump({"rejected": entries}, allow_unicode=True, sort_keys=False, default_flow_style=None)
    book_file_write(root=root, relative=REJECTED, text=header + body)


# --- merge and split of queued proposals ----------------------------------------------------------


def _pending(items: Iterable[PendingItem]) -> list[PendingItem]:
    out = list(PendingItem.objects.select_for_update().filter(pk__in=[i.pk for i in items]).order_by("pk"))
    for item in out:
        if item.kind != KIND:
            raise InvalidInput(f"待确认项 #{item.pk} 不是发现的实体", extra={"pk": item.pk})
        if item.status != PendingItem.Status.PENDING:
            raise Conflict(f"待确认项 #{item.pk} 已处理（{item.get_status_display()}）", extra={"pk": item.pk})
    return out


@transaction.atomic
def discovery_merge(*, items: Iterable[PendingItem], journal: bool = True) -> dict[str, Any]:
    """Merge queued proposals into the most frequent one: the others' names become its aliases, and they
    leave the queue (status rejected, ``merged_into``: the kept proposal's name; not recorded as rejections).
    Journaled (``discovery.merge``)."""
    items = list(items)
    if items:
        journal_lock(book=items[0].book, heal=journal)
    chosen = _pending(items)
    keys = [_item_key(i) for i in chosen]
    if len(chosen) < 2:
        raise InvalidInput("合并需要至少选择两个发现的实体", extra={"count": len(chosen)})
    types = {i.payload["type"] for i in chosen}
    if len(types) > 1:
        raise InvalidInput(
            f"只能合并同一类型的提议（选中了 {'、'.join(sorted(types))}）", extra={"types": sorted(types)}
        )
    chosen.sort(key=lambda i: (-i.payload.get("evidence", {}).get("count", 0), i.pk))
    target, others = chosen[0], chosen[1:]
    payload = dict(target.payload)
    aliases = list(payload.get("aliases", []))
    have = set(_payload_names(payload))
    evidence = dict(payload.get("evidence", {}))
    for other in others:
        op = other.payload
        for alias in [
            {"alias": op["name"], "count": op.get("evidence", {}).get("count", 0), "generic": False, "why": "人工合并"},
            *op.get("aliases", []),
        ]:
            if alias["alias"] not in have:
                aliases.append(alias | ({"why": "人工合并"} if alias.get("why") != "人工合并" else {}))
                have.add(alias["alias"])
        oe = op.get("evidence", {})
        evidence["count"] = evidence.get("count", 0) + oe.get("count", 0)
        evidence["first_chapter"] = min(evidence.get("first_chapter", 10**9), oe.get("first_chapter", 10**9))
        other.status = PendingItem.Status.REJECTED
        other.resolution = {"merged_into": target.payload["name"]}  # a name: a pk changes with every rebuild
        other.resolved_at = timezone.now()
        other.save(update_fields=["status", "resolution", "resolved_at"])
    payload["aliases"], payload["evidence"] = aliases, evidence
    target.payload = payload
    target.chapter = evidence.get("first_chapter", target.chapter)
    target.save(update_fields=["payload", "chapter"])
    if journal:
        journal_append(book=target.book, op="discovery.merge", items=keys)
    return {"pk": target.pk, "name": payload["name"], "merged": [o.pk for o in others], "aliases": len(aliases)}


@transaction.atomic
def discovery_split(*, item: PendingItem, aliases: list[str], journal: bool = True) -> dict[str, Any]:
    """Split ``aliases`` off a queued proposal into a new proposal (the first of them is its name).
    Journaled (``discovery.split``)."""
    journal_lock(book=item.book, heal=journal)
    (item,) = _pending([item])
    key = _item_key(item)
    payload = dict(item.payload)
    own = {a["alias"]: a for a in payload.get("aliases", [])}
    wanted = [a.strip() for a in aliases if a.strip()]
    missing = [a for a in wanted if a not in own]
    if not wanted or missing:
        raise InvalidInput(
            f"拆分：「{payload['name']}」没有别名 {'、'.join(missing) or '（未填写）'}",
            extra={"pk": item.pk, "missing": missing},
        )
    moved = [own[a] for a in wanted]
    payload["aliases"] = [a for a in payload["aliases"] if a["alias"] not in set(wanted)]
    item.payload = payload
    item.save(update_fields=["payload"])
    head, rest = moved[0], moved[1:]
    new_payload = {
        "type": payload["type"],
        "name": head["alias"],
        "aliases": rest,
        "confidence": item.confidence,
        "band": payload.get("band", _band(item.confidence or 0)),
        "evidence": {
            "count": sum(a.get("count", 0) for a in moved),
            "first_chapter": payload.get("evidence", {}).get("first_chapter"),
            "signals": {},
            "samples": [],
            "split_from_name": payload["name"],  # a name, not a pk: the journal finds items by payload
        },
    }
    new = PendingItem.objects.create(
        book=item.book,
        chapter=item.chapter,
        kind=KIND,
        payload=new_payload,
        confidence=item.confidence,
        source=SOURCE,
        note=f"从「{payload['name']}」拆出",
    )
    if journal:
        journal_append(book=item.book, op="discovery.split", item=key, aliases=aliases)
    return {"pk": item.pk, "new": new.pk, "name": head["alias"], "aliases": [a["alias"] for a in rest]}
