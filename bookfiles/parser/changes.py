"""State changes the author declares in the folder (issue 27): a card's or roster entry's ``changes:``
list and a timeline row's 状态变化 cell. Each becomes a ``StateChangeData`` that applies from the end of
its chapter on, as a chapter's ``<entity-update>`` would; a bad entry is an issue naming where it is.
``ctx`` is the file parser's context (``files._Ctx``: ``issue`` and ``int_field``)."""

import re
from typing import Any

import yaml

from bookfiles.parser.markup import jsonable
from bookfiles.parser.types import StateChangeData


def _str(value: Any) -> str:
    return "" if value is None else str(value).strip()


# ── issue 27: state changes declared in the entry (``changes:``) ─────────────────────────────────────

CHANGE_OPS = ("set", "unset", "add", "remove", "inc")


def entry_changes(ctx: Any, value: Any, name: str, line: int | None) -> list[StateChangeData]:
    """``changes:`` — a list of ``{chapter: N, set: {status: 死亡}, remove: {possessions: 青龙刀}, note: …}``
    (``unset`` takes a key or a list of keys; ``add`` / ``remove`` a value or a list; ``inc`` a number):
    each applies from the end of chapter N on, as a chapter's ``<entity-update>`` would."""
    out: list[StateChangeData] = []
    if value is None or value == "":
        return out
    if not isinstance(value, list):
        ctx.issue("invalid_value", f"{name} 的 changes 应为条目列表，实际为 {value!r}", line=line)
        return out
    for index, item in enumerate(value, start=1):
        where = f"{name} 的 changes 第 {index} 条"
        if not isinstance(item, dict):
            ctx.issue(
                "invalid_value", f"{where}应为映射（chapter 与 set / add / remove …），实际为 {item!r}", line=line
            )
            continue
        unknown = [k for k in item if k not in (*CHANGE_OPS, "chapter", "note")]
        if unknown:
            ctx.issue(
                "invalid_value",
                f"{where}有未知的键 {'、'.join(map(str, unknown))}（可用 chapter、note、{'、'.join(CHANGE_OPS)}）",
                line=line,
            )
        if item.get("chapter") in (None, ""):
            ctx.issue("invalid_value", f"{where}缺少 chapter（从第几章起生效）", line=line)
            continue
        chapter = ctx.int_field(item, "chapter")
        if chapter is None:
            continue
        note = _str(item.get("note"))
        ops: list[StateChangeData] = []
        for op in CHANGE_OPS:
            body = item.get(op)
            if body is None:
                continue
            if op == "unset":
                keys = body if isinstance(body, list) else list(body) if isinstance(body, dict) else [body]
                ops += [StateChangeData(chapter, op, _str(k), None, note) for k in keys if _str(k)]
                continue
            if not isinstance(body, dict) or not body:
                ctx.issue("invalid_value", f"{where}的 {op} 应为「字段: 值」映射，实际为 {body!r}", line=line)
                continue
            for key, raw in body.items():
                if op == "inc" and (isinstance(raw, bool) or not isinstance(raw, int | float)):
                    ctx.issue("invalid_value", f"{where}的 inc {key} 应为数字，实际为 {raw!r}", line=line)
                    continue
                values = raw if op in ("add", "remove") and isinstance(raw, list) else [raw]
                ops += [StateChangeData(chapter, op, _str(key), jsonable(v), note) for v in values]
        if not ops:
            ctx.issue("invalid_value", f"{where}没有任何变化（set / unset / add / remove / inc）", line=line)
        out += ops
    return out


# ── issue 27: state changes declared in a timeline row (its 状态变化 cell) ─────────────────────────────

CHANGES_COLUMN = "状态变化"
CHANGE_ENTRY = re.compile(r"^(?P<name>\S+)\s+(?P<op>[a-z]+)\s+(?P<field>[^=\s]+)\s*(?:=\s*(?P<value>.*))?$")


def _timeline_value(raw: str) -> Any:
    """A cell's value read as a card's YAML value would be (``3`` a number, ``[a, b]`` a list), else
    the text itself."""
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    return raw if value is None or isinstance(value, dict) else jsonable(value)


def timeline_changes(
    ctx: Any, cell: str, number: int | None, chapter_cell: str, event: str, line: int | None
) -> list[StateChangeData]:
    """``关羽 set status=死亡；关羽 remove possessions=青龙刀；关兴 add possessions=青龙刀`` — entries
    separated by ``；`` or ``;``, each ``名字 操作 字段=值`` with a card's operations (``unset 字段`` takes
    no value; ``inc`` a number). Each applies from the end of the row's chapter on, as a card's
    ``changes:`` entry would; the row's 事件 is its note."""
    entries = [e.strip() for e in re.split(r"[；;]", cell or "") if e.strip()]
    if not entries:
        return []
    where = f"时间线第 {line} 行的状态变化" if line else "时间线的状态变化"
    if number is None:
        if not chapter_cell:
            ctx.issue("invalid_value", f"{where}没有章号（「章」列为空），不知从第几章起生效", line=line)
        return []
    out: list[StateChangeData] = []
    for entry in entries:
        match = CHANGE_ENTRY.match(entry)
        if match is None:
            ctx.issue(
                "invalid_value",
                f"{where}「{entry}」应写成「名字 操作 字段=值」（如「关羽 set status=死亡」）",
                line=line,
            )
            continue
        name, op, key, raw = match.group("name", "op", "field", "value")
        if op not in CHANGE_OPS:
            ctx.issue("invalid_value", f"{where}「{entry}」的操作 {op} 未知（可用 {'、'.join(CHANGE_OPS)}）", line=line)
            continue
        if op == "unset":
            if raw is not None:
                ctx.issue("invalid_value", f"{where}「{entry}」：unset 不带值（写「{name} unset {key}」）", line=line)
                continue
            out.append(StateChangeData(number, op, key, None, event, entity=name, line=line))
            continue
        if raw is None or not raw.strip():
            ctx.issue("invalid_value", f"{where}「{entry}」缺少值（{op} {key}=…）", line=line)
            continue
        value = _timeline_value(raw.strip())
        if op == "inc" and (isinstance(value, bool) or not isinstance(value, int | float)):
            ctx.issue("invalid_value", f"{where}「{entry}」：inc 的值应为数字，实际为 {raw.strip()!r}", line=line)
            continue
        values = value if op in ("add", "remove") and isinstance(value, list) else [value]
        out += [StateChangeData(number, op, key, v, event, entity=name, line=line) for v in values]
    return out
