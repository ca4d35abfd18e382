"""The authors' names of the usual state keys of character cards (docs/book-format.md): one table,
read by every place that shows a state to a person or to the writing agent (the dashboard, the
context pack), so 境界 is 境界 everywhere and never ``realm``. Keys not listed are shown as written."""

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
}


def state_field_label(key: str) -> str:
    """The label of the state key ``key`` (the key itself when it has none)."""
    return STATE_FIELD_LABELS.get(key, key)
