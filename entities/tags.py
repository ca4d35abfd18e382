"""Manual entity tags written by the author inside chapter text, applied when the chapter is
finalized (the rebuilder strips them from the body and keeps them raw in ``Chapter.entity_tags``).

Grammar (attributes in double or single quotes; documented in docs/entities.md)::

    <entity type="角色" name="赵元" id="zhaoyuan" tier="次要" desc="外门弟子" aliases="赵师兄,老赵"/>
    <entity type="物品" name="玉佩">description text</entity>
    <entity-alias ref="林风" alias="林宗主" from="80" note="接任宗主后"/>
    <entity-update id="linfeng" reason="突破">
      <set field="realm" value="筑基"/>  <unset field="wound"/>
      <add field="possessions" value="玉佩"/>  <remove field="possessions" value="断剑"/>
      <inc field="spirit_stones" value="-5"/>
    </entity-update>

``id=`` names an entity by id, ``ref=`` by id or alias (with optional ``type=``). Values that read as
numbers (``12``, ``-5``, ``1.5``) are numbers, everything else a string. A bad tag never aborts the
finalize: it is skipped and reported in ``TagApplication.issues``.
"""

import re
from typing import Any

from django.db import transaction

from entities.models import Entity, StateChange, TagApplication
from webnovel.exceptions import DomainError
from webnovel.models import Book

_ATTR = re.compile(r"([A-Za-z_][\w-]*)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_HEAD = re.compile(r"^<(entity-update|entity-alias|entity)\b([^>]*?)(/?)>", re.DOTALL)
_OP = re.compile(r"<(set|unset|add|remove|inc)\b([^>]*?)/?>", re.DOTALL)
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


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


def tag_parse(text: str) -> dict[str, Any]:
    """One raw tag → {"kind", "attrs", "inner", "ops"}; ValueError when it is not a tag we know."""
    match = _HEAD.match(text.strip())
    if match is None:
        raise ValueError("无法识别的实体标签")
    kind, head, _ = match.groups()
    inner = text.strip()[match.end() :]
    inner = re.sub(rf"</{kind}\s*>\s*$", "", inner)
    ops = [{"op": m.group(1), **_attrs(m.group(2))} for m in _OP.finditer(inner)] if kind == "entity-update" else []
    return {"kind": kind, "attrs": _attrs(head), "inner": inner.strip(), "ops": ops}


def _target(book: Book, attrs: dict[str, str], chapter: int) -> Entity:
    from entities.selectors import alias_resolve, entity_get

    if attrs.get("id"):
        return entity_get(book=book, ref=attrs["id"], type=attrs.get("type"))
    ref = attrs.get("ref") or attrs.get("name")
    if not ref:
        raise ValueError("缺少 id 或 ref 属性")
    entity = Entity.objects.filter(book=book, entity_id=ref).first()
    return entity or alias_resolve(book=book, alias=ref, type=attrs.get("type"), chapter=chapter)


def chapter_tags_clear(*, book: Book, chapter: int | None, keep: set[int] | None = None) -> None:
    """Drop what the tags of a chapter (None: every chapter not in ``keep``) wrote before."""
    changes = StateChange.objects.filter(book=book, source=StateChange.Source.TAG)
    apps = TagApplication.objects.filter(book=book)
    if chapter is not None:
        changes, apps = changes.filter(chapter=chapter), apps.filter(chapter=chapter)
    elif keep:
        changes, apps = changes.exclude(chapter__in=keep), apps.exclude(chapter__in=keep)
    changes.delete()
    apps.delete()


@transaction.atomic
def chapter_tags_apply(*, book: Book, chapter: int, tags: list[dict]) -> dict:
    """Apply a chapter's raw tags (replacing what they wrote before); returns what was applied and
    the issues (bad tags are skipped and reported, never raised)."""
    from entities.services import alias_add, entity_create, state_change_record

    chapter_tags_clear(book=book, chapter=chapter)
    applied: list[str] = []
    issues: list[dict] = []
    seq = 0
    for tag in tags:
        line, raw = tag.get("line"), tag.get("text", "")
        try:
            parsed = tag_parse(raw)
            attrs = parsed["attrs"]
            if parsed["kind"] == "entity":
                name, type_ = attrs.get("name"), attrs.get("type", "角色")
                if not name:
                    raise ValueError("<entity> 缺少 name 属性")
                entity = Entity.objects.filter(book=book, entity_id=attrs["id"]).first() if attrs.get("id") else None
                entity = entity or Entity.objects.filter(book=book, canonical_name=name, type=type_).first()
                if entity is None:
                    entity = entity_create(
                        book=book,
                        name=name,
                        type=type_,
                        tier=attrs.get("tier", Entity.Tier.MINOR),
                        description=attrs.get("desc") or parsed["inner"],
                        entity_id=attrs.get("id") or None,
                        first_appearance=chapter,
                        source="tag",
                    )
                for alias in filter(None, (a.strip() for a in re.split(r"[,，、]", attrs.get("aliases", "")))):
                    alias_add(entity=entity, alias=alias, source="tag")
                applied.append(f"entity:{entity.entity_id}")
            elif parsed["kind"] == "entity-alias":
                entity = _target(book, attrs, chapter)
                if not attrs.get("alias"):
                    raise ValueError("<entity-alias> 缺少 alias 属性")
                alias_add(
                    entity=entity,
                    alias=attrs["alias"],
                    valid_from=_int(attrs.get("from")),
                    valid_to=_int(attrs.get("to")),
                    note=attrs.get("note", ""),
                    source="tag",
                )
                applied.append(f"alias:{entity.entity_id}:{attrs['alias']}")
            else:
                entity = _target(book, attrs, chapter)
                if not parsed["ops"]:
                    raise ValueError("<entity-update> 内没有 set/unset/add/remove/inc")
                for op in parsed["ops"]:
                    if not op.get("field"):
                        raise ValueError(f"<{op['op']}> 缺少 field 属性")
                    seq += 1
                    with transaction.atomic():
                        state_change_record(
                            entity=entity,
                            chapter=chapter,
                            field=op["field"],
                            op=op["op"],
                            new=_value(op.get("value")),
                            reason=op.get("reason") or attrs.get("reason", ""),
                            source=StateChange.Source.TAG,
                            where=f"第{chapter}章第{line}行 <{op['op']}>",
                        )
                    applied.append(f"update:{entity.entity_id}.{op['field']}:{op['op']}")
        except (ValueError, DomainError) as exc:
            message = exc.message if isinstance(exc, DomainError) else str(exc)
            issues.append({"line": line, "text": raw, "message": message})
    TagApplication.objects.create(book=book, chapter=chapter, applied=applied, issues=issues)
    return {"chapter": chapter, "applied": applied, "issues": issues}
