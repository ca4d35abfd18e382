"""Manual entity tags written by the author inside chapter text, applied when the chapter is
finalized (the rebuilder strips them from the body and keeps them raw in ``Chapter.entity_tags``).

Grammar (attributes in double or single quotes; documented in docs/entities.md). The seed's own
syntax (seed 000 §3) applies verbatim::

    <entity type="角色" id="xiaoyan" name="萧炎" desc="萧家三少爷" tier="核心"><alias>废物</alias></entity>
    <entity-alias ref="萧炎" alias="岩枭" context="黑角域化名"/>
    <entity-update ref="萧炎">
      <set key="realm" value="斗者" reason="突破"/>  <unset key="injury"/>
      <add key="items" value="玄重尺"/>  <remove key="items" value="玄重尺"/>  <inc key="spirit_stones" delta="1"/>
    </entity-update>

and so does the older dialect beside it: ``field=`` for ``key=``, ``value=`` for ``delta=``,
``note=`` for ``context=``, ``aliases="赵师兄,老赵"`` on ``<entity>``, ``from=`` / ``to=`` windows on an
alias, and a ``reason=`` on ``<entity-update>`` for all its operations. ``generic="true"`` on an
``<alias>`` child or an ``<entity-alias>`` marks a generic alias (weak mentions, docs/entities.md).

``id=`` names an entity by id, ``ref=`` by id or alias (with optional ``type=``). Values that read as
numbers (``12``, ``-5``, ``1.5``) are numbers, everything else a string. A bad tag never aborts the
finalize: it is skipped (or, for one bad operation of an ``<entity-update>``, the others are
applied) and reported in ``TagApplication.issues`` and in the finalize / sync / rebuild report.

Every pattern here is linear in its input: a head or an operation holds no ``<`` or ``>``, and an
attribute name is only tried at the start of a word (a rescan per character was quadratic).
"""

import re
from collections.abc import Iterable
from typing import Any

from django.db import transaction

from core.models import Book
from entities.generic import alias_is_generic
from entities.models import Entity, StateChange, TagApplication
from entities.selectors import alias_resolve, entity_get
from entities.services.writes import alias_add, entity_create, state_change_record, state_changes_renumber
from kernel.exceptions import DomainError

_ATTR = re.compile(r"(?<![\w-])([A-Za-z_][\w-]*)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_HEAD = re.compile(r"^<(entity-update|entity-alias|entity)(?=[\s/>])([^<>]*)>")
_OP = re.compile(r"<(set|unset|add|remove|inc)(?=[\s/>])([^<>]*)>")
_ALIAS_CHILD = re.compile(r"<alias(?=[\s>])([^<>]*)>([^<]*)</alias\s*>")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_TRUE = {"true", "yes", "1", "是", "y"}


def _attrs(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in _ATTR.finditer(text)}


def _value(raw: str | None) -> Any:
    if raw is None:
        return None
    if _NUMBER.match(raw.strip()):
        return float(raw) if "." in raw else int(raw)
    return raw


def _int(raw: str | None) -> int | None:
    return int(raw) if raw not in (None, "") and str(raw).strip().isdigit() else None


def _alias_fields(attrs: dict[str, str]) -> dict[str, Any]:
    """The window, note and generic mark of an alias, in either dialect. A name that is generic by grammar
    (那个少年, 老者, 他: entities/generic.py) is marked so without ``generic="true"``, as the extraction
    ingestion and the migration of old projects mark it."""
    return {
        "valid_from": _int(attrs.get("from")),
        "valid_to": _int(attrs.get("to")),
        "note": attrs.get("note") or attrs.get("context") or "",
        "generic": str(attrs.get("generic", "")).strip().lower() in _TRUE
        or alias_is_generic(str(attrs.get("alias") or "")),
    }


def tag_parse(text: str) -> dict[str, Any]:
    """One raw tag → {"kind", "attrs", "inner", "ops", "aliases"}; ValueError when it is not a tag we
    know or a paired tag is left unclosed."""
    text = text.strip()
    match = _HEAD.match(text)
    if match is None:
        raise ValueError("无法识别的实体标签")
    kind, head = match.groups()
    closed = head.rstrip().endswith("/")
    if closed:
        head = head.rstrip()[:-1]
    inner = text[match.end() :]
    close = re.search(rf"</{kind}\s*>\s*\Z", inner)
    if close is not None:
        inner, closed = inner[: close.start()], True
    if not closed and kind != "entity-alias":  # <entity-alias …> is complete in its head
        raise ValueError(f"<{kind}> 没有闭合：缺少 </{kind}>（或写成自闭合的 <{kind} …/>）")
    ops = [{"op": m.group(1), **_attrs(m.group(2))} for m in _OP.finditer(inner)] if kind == "entity-update" else []
    aliases = []
    if kind == "entity":
        aliases = [{"alias": m.group(2).strip(), **_attrs(m.group(1))} for m in _ALIAS_CHILD.finditer(inner)]
        inner = _ALIAS_CHILD.sub("", inner)
    return {"kind": kind, "attrs": _attrs(head), "inner": inner.strip(), "ops": ops, "aliases": aliases}


def _target(book: Book, attrs: dict[str, str], number: int) -> Entity:
    if attrs.get("id"):
        return entity_get(book=book, ref=attrs["id"], type=attrs.get("type"))
    ref = attrs.get("ref") or attrs.get("name")
    if not ref:
        raise ValueError("缺少 id 或 ref 属性")
    entity = Entity.objects.filter(book=book, entity_id=ref).first()
    return entity or alias_resolve(book=book, alias=ref, type=attrs.get("type"), number=number)


def tag_applications_rename(*, book: Book, old: str, new: str) -> None:
    """What the applied tags say of entity ``old`` (``entity:…``, ``alias:…:``, ``update:….``), now that
    its id is ``new``."""

    def renamed(item: str) -> str:
        kind, _, rest = item.partition(":")
        after = {"entity": "", "alias": ":", "update": "."}.get(kind)  # what follows the id in each kind
        if after is not None and (rest == old if not after else rest.startswith(old + after)):
            return f"{kind}:{new}{rest[len(old) :]}"
        return item

    for row in TagApplication.objects.filter(book=book):
        applied = [renamed(item) for item in row.applied]
        if applied != row.applied:
            row.applied = applied
            row.save(update_fields=["applied"])


def chapter_tags_clear(
    *, book: Book, number: int | None, keep: set[int] | None = None, numbers: Iterable[int] = ()
) -> None:
    """Drop what the tags of a chapter (None: every chapter not in ``keep``; or of each of ``numbers``,
    in two statements per 500 chapters, not two per chapter) wrote before."""
    changes = StateChange.objects.filter(book=book, source=StateChange.Source.TAG)
    apps = TagApplication.objects.filter(book=book)
    if numbers:
        wanted = sorted(set(numbers))
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            changes.filter(chapter__in=part).delete()
            apps.filter(chapter__in=part).delete()
        return
    if number is not None:
        changes, apps = changes.filter(chapter=number), apps.filter(chapter=number)
    elif keep:
        changes, apps = changes.exclude(chapter__in=keep), apps.exclude(chapter__in=keep)
    changes.delete()
    apps.delete()


@transaction.atomic
def chapter_tags_apply(*, book: Book, number: int, tags: list[dict]) -> dict:
    """Apply a chapter's raw tags (replacing what they wrote before); returns what was applied and
    the issues (bad tags are skipped and reported, never raised; ``partial`` marks a tag of which
    only some parts applied)."""
    chapter_tags_clear(book=book, number=number)
    applied: list[str] = []
    issues: list[dict] = []
    for tag in tags:
        line, raw = tag.get("line"), tag.get("text", "")
        problems: list[str] = []
        done = 0
        try:
            parsed = tag_parse(raw)
            handler = {"entity": _entity_tag, "entity-alias": _alias_tag, "entity-update": _update_tag}
            done = handler[parsed["kind"]](book, number, line, parsed, applied, problems)
        except (ValueError, DomainError) as exc:
            problems.append(exc.message if isinstance(exc, DomainError) else str(exc))
        for message in problems:
            issues.append({"line": line, "text": raw, "message": message, "partial": done > 0})
    TagApplication.objects.create(book=book, chapter=number, applied=applied, issues=issues)
    _tags_first(book=book, number=number)
    return {"chapter": number, "applied": applied, "issues": issues}


def _tags_first(*, book: Book, number: int) -> None:
    """Put the chapter's tag-made changes first among each entity's changes at ``number`` (seq 1…),
    the others after them in their order: a rebuild writes the chapter file's rows before it replays
    the journal's, so a chapter re-applied by sync after a curated change moved into it must number
    them the same way (issue 24). Declared rows (a card's or timeline's, seq 0) stay where they are."""
    rows = StateChange.objects.filter(book=book, chapter=number, seq__gt=0)
    state_changes_renumber(rows=rows, rank=lambda row: 0 if row.source == StateChange.Source.TAG else 1)


def _entity_tag(book, chapter, line, parsed, applied, problems) -> int:
    attrs = parsed["attrs"]
    name, type_ = attrs.get("name"), attrs.get("type", "角色")
    known = Entity.objects.filter(book=book, entity_id=attrs["id"]).first() if attrs.get("id") else None
    if not name and known is not None:
        name, type_ = known.canonical_name, known.type  # <entity id="linfeng"/>: a known entity, named here
    if not name:
        raise ValueError("<entity> 缺少 name 属性（或已有实体的 id）")
    if type_ not in Entity.Type.values:
        raise ValueError(f"<entity> 的 type '{type_}' 不在允许范围（{' | '.join(Entity.Type.values)}）")
    tier = attrs.get("tier", Entity.Tier.DECOR)
    if tier not in Entity.Tier.values:
        problems.append(f"<entity> 的 tier '{tier}' 不在允许范围（{' | '.join(Entity.Tier.values)}），按 装饰 处理")
        tier = Entity.Tier.DECOR
    entity = known or Entity.objects.filter(book=book, canonical_name=name, type=type_).first()
    if entity is None:
        entity = entity_create(
            book=book,
            name=name,
            type=type_,
            tier=tier,
            description=attrs.get("desc") or parsed["inner"],
            entity_id=attrs.get("id") or None,
            first_appearance=chapter,
            source="tag",
        )
    applied.append(f"entity:{entity.entity_id}")
    aliases = [{"alias": a.strip()} for a in re.split(r"[,，、]", attrs.get("aliases", "")) if a.strip()]
    for item in aliases + parsed["aliases"]:
        if not item["alias"]:
            problems.append("<alias> 为空，已跳过")
            continue
        try:
            with transaction.atomic():
                alias_add(entity=entity, alias=item["alias"], source="tag", **_alias_fields(item))
            applied.append(f"alias:{entity.entity_id}:{item['alias']}")
        except DomainError as exc:
            problems.append(f"别名 '{item['alias']}'：{exc.message}")
    return 1


def _alias_tag(book, chapter, line, parsed, applied, problems) -> int:
    attrs = parsed["attrs"]
    entity = _target(book, attrs, chapter)
    if not attrs.get("alias"):
        raise ValueError("<entity-alias> 缺少 alias 属性")
    alias_add(entity=entity, alias=attrs["alias"], source="tag", **_alias_fields(attrs))
    applied.append(f"alias:{entity.entity_id}:{attrs['alias']}")
    return 1


def _update_tag(book, chapter, line, parsed, applied, problems) -> int:
    attrs = parsed["attrs"]
    entity = _target(book, attrs, chapter)
    if not parsed["ops"]:
        raise ValueError("<entity-update> 内没有 set/unset/add/remove/inc")
    done = 0
    for op in parsed["ops"]:
        name = op["op"]
        field = op.get("key") or op.get("field")
        if not field:
            problems.append(f"<{name}> 缺少 key 属性（或 field）")
            continue
        raw = op.get("delta", op.get("value")) if name == "inc" else op.get("value")
        if raw is None and name in ("set", "add", "remove", "inc"):
            wanted = "delta 属性（或 value）" if name == "inc" else "value 属性"
            problems.append(f'<{name} key="{field}"> 缺少 {wanted}')
            continue
        try:
            with transaction.atomic():
                state_change_record(
                    entity=entity,
                    number=chapter,
                    field=field,
                    op=name,
                    new=_value(raw),
                    reason=op.get("reason") or attrs.get("reason", ""),
                    source=StateChange.Source.TAG,
                    where=f"第{chapter}章第{line}行 <{name}>",
                )
        except DomainError as exc:
            problems.append(exc.message)
            continue
        applied.append(f"update:{entity.entity_id}.{field}:{name}")
        done += 1
    return done
