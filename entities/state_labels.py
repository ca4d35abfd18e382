"""The authors' names of the usual state keys of character cards (docs/book-format.md): one table,
read by every place that shows a state to a person or to the writing agent (the dashboard, the
admin, the context pack), so 境界 is 境界 everywhere and never ``realm``. A book names its own keys in
``book.yaml`` (``state_labels: {spirit_stones: 灵石}``), which win over the table; keys neither
names are shown as written (a card that writes ``境界:`` is its own label)."""

from typing import Any

STATE_FIELD_LABELS: dict[str, str] = {
    "realm": "境界",
    "location": "位置",
    "status": "状态",
    "possessions": "持有物",
    "faction": "势力",
    "title": "称号",
    "age": "年龄",
    "identity": "身份",
    "skills": "功法",
    "spirit_stones": "灵石",
    "wound": "伤势",
    "attitude": "态度",
    "mood": "心境",
    # an extraction's chapter_meta (memory's 章节元数据 facts)
    "hook": "钩子",
    "coolpoint": "爽点",
    "pov": "视角",
}


def state_labels(*, book: Any = None) -> dict[str, str]:
    """The label table for ``book``: the house table, then the book's own ``state_labels``."""
    own = (getattr(book, "config", None) or {}).get("state_labels") if book is not None else None
    if not isinstance(own, dict):
        return STATE_FIELD_LABELS
    return {**STATE_FIELD_LABELS, **{str(k): str(v) for k, v in own.items() if str(v).strip()}}


def state_field_label(key: str, labels: dict[str, str] | None = None) -> str:
    """The label of the state key ``key`` (the key itself when it has none)."""
    return (labels if labels is not None else STATE_FIELD_LABELS).get(key, key)


def _value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "、".join(_value(v) for v in value) or "（空）"
    if isinstance(value, dict):
        return "；".join(f"{k}：{_value(v)}" for k, v in value.items()) or "（空）"
    return "（空）" if value in (None, "") else str(value)


def state_change_sentence(*, field: str, op: str, new: Any, labels: dict[str, str] | None = None) -> str:
    """A state change as an author says it: 灵石 +5, 功法 新增「听雨诀」, 境界 → 筑基初期."""
    label = state_field_label(field, labels)
    if op == "inc":
        return f"{label} {'+' if not str(new).startswith('-') else ''}{_value(new)}"
    if op == "add":
        return f"{label} 新增「{_value(new)}」"
    if op == "remove":
        return f"{label} 去掉「{_value(new)}」"
    if op == "unset":
        return f"{label} 清除"
    return f"{label} → {_value(new)}"


def state_text(state: dict[str, Any], labels: dict[str, str] | None = None) -> str:
    """A whole state in one line: 境界：筑基初期；位置：雾海；功法：青岚十三式、听雨诀."""
    return "；".join(f"{state_field_label(k, labels)}：{_value(v)}" for k, v in state.items()) or "（无）"
