"""Entity ids: the pinyin of the canonical name with a type prefix (docs/book-format.md, "Entity ids")."""

import re
from collections.abc import Iterable
from functools import lru_cache

TYPE_PREFIXES = {"角色": "", "地点": "loc_", "物品": "item_", "势力": "faction_", "招式": "skill_"}
_NOT_ID = re.compile(r"[^a-z0-9_]")
ID_MAX = 100  # Entity.entity_id holds 120: room for a collision suffix
_ID = re.compile(rf"[a-z0-9][a-z0-9_-]{{0,{ID_MAX - 1}}}")


def entity_id_check(value: str) -> str:
    """An id an agent or a curator supplies (an extraction's ``suggested_id``) must look like the ids
    the book gets: lowercase ASCII letters and digits, ``_`` / ``-`` after the first, at most 100
    characters. It becomes a URL segment and a dashboard link, so ``../../etc/passwd`` is refused."""
    if not _ID.fullmatch(value):
        raise ValueError(
            f"实体 id 无效：'{value[:120]}'（只能用小写英文字母、数字、_ 和 -，以字母或数字开头，"
            f"至多 {ID_MAX} 个字符，如 linfeng、loc_qinglanzong）"
        )
    return value


def entity_id_base(*, name: str, type: str) -> str:
    """林风 → linfeng; 青岚宗 (势力) → faction_qinglanzong. Non-Chinese letters and digits are kept."""
    return TYPE_PREFIXES.get(type, "") + _pinyin(name)


@lru_cache(maxsize=65536)
def _pinyin(name: str) -> str:
    from pypinyin import lazy_pinyin  # imported lazily: loading its dictionaries takes ~0.2 s

    return _NOT_ID.sub("", "".join(lazy_pinyin(name)).lower()) or "x"


def entity_ids_assign(entries: Iterable[tuple[str, str, str]], *, taken: Iterable[str] = ()) -> list[str]:
    """Ids for ``entries`` of (name, type, explicit id or ''), in file order. Explicit ids are kept;
    generated ids get ``_1``, ``_2``, … when the base is already used (by an earlier entry, an
    explicit id, or an id in ``taken``)."""
    entries = list(entries)
    used = set(taken) | {explicit for _, _, explicit in entries if explicit}
    ids = []
    for name, type_name, explicit in entries:
        if explicit:
            ids.append(explicit)
            continue
        base = entity_id_base(name=name, type=type_name)
        candidate, n = base, 0
        while candidate in used:
            n += 1
            candidate = f"{base}_{n}"
        used.add(candidate)
        ids.append(candidate)
    return ids
