"""A book's declared continuity rules, read from ``book.yaml`` (``continuity:``) and the front matter of
its style files (``文风/*.md``). Pure functions over plain dicts: no Django, no database.

Every rule has a default, so a book that declares nothing is still checked for what needs no
declaration (statuses, aliases, names, secrets, threads); the realm check needs a ladder and is
silent without one (docs/continuity.md)."""

import re
from dataclasses import dataclass, field
from typing import Any

# Statuses under which a character cannot act or speak. A status matches when it contains one of
# these words (已陨落 contains 陨落), so a book's own wording need not be listed exactly.
DEFAULT_INACTIVE_STATUSES = (
    "死亡",
    "已死",
    "身死",
    "身亡",
    "战死",
    "阵亡",
    "陨落",
    "殒命",
    "伏诛",
    "被杀",
    "遇害",
    "已故",
    "坐化",
    "封印",
    "失踪",
    "下落不明",
)
DEFAULT_REALM_LEVELS = ("初期", "中期", "后期", "大圆满")
DEFAULT_POSSESSION_FIELDS = ("possessions", "items")
QUOTE_PAIRS = {"“”": ("“", "”"), "「」": ("「", "」"), "『』": ("『", "』"), '""': ('"', '"'), "‘’": ("‘", "’")}


@dataclass
class Realm:
    name: str
    levels: tuple[str, ...]


@dataclass
class Rules:
    inactive_statuses: tuple[str, ...] = DEFAULT_INACTIVE_STATUSES
    realm_field: str = "realm"
    realms: list[Realm] = field(default_factory=list)
    possession_fields: tuple[str, ...] = DEFAULT_POSSESSION_FIELDS
    # banned word → where it was declared (a style file's path, or book.yaml)
    banned_words: dict[str, str] = field(default_factory=dict)
    quotes: str | None = None  # one key of QUOTE_PAIRS
    quotes_source: str = ""
    problems: list[str] = field(default_factory=list)  # declarations that were ignored, and why

    def inactive(self, status: Any) -> bool:
        text = str(status or "")
        return bool(text) and any(word in text for word in self.inactive_statuses)


def _str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


def _realms(value: Any, levels: tuple[str, ...], problems: list[str]) -> list[Realm]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f"continuity.realms 应为境界列表，实际为 {value!r}")
        return []
    realms = []
    for item in value:
        if isinstance(item, str) and item.strip():
            realms.append(Realm(name=item.strip(), levels=levels))
        elif isinstance(item, dict) and str(item.get("name") or "").strip():
            own = item.get("levels")
            realms.append(
                Realm(name=str(item["name"]).strip(), levels=tuple(_str_list(own)) if own is not None else levels)
            )
        else:
            problems.append(f"continuity.realms 的条目应为境界名或 {{name, levels}}，实际为 {item!r}")
    return realms


def rules_from(*, config: dict[str, Any], style_docs: list[tuple[str, dict[str, Any]]]) -> Rules:
    """The rules of a book: ``config`` is book.yaml, ``style_docs`` the (path, front matter) of its style files."""
    rules = Rules()
    section = config.get("continuity") if isinstance(config, dict) else None
    if section is not None and not isinstance(section, dict):
        rules.problems.append(f"book.yaml 的 continuity 应为键值映射，实际为 {section!r}")
        section = None
    section = section or {}
    if "inactive_statuses" in section:
        rules.inactive_statuses = tuple(_str_list(section["inactive_statuses"]))
    if str(section.get("realm_field") or "").strip():
        rules.realm_field = str(section["realm_field"]).strip()
    levels = tuple(_str_list(section["realm_levels"])) if "realm_levels" in section else DEFAULT_REALM_LEVELS
    rules.realms = _realms(section.get("realms"), levels, rules.problems)
    if "possession_fields" in section:
        rules.possession_fields = tuple(_str_list(section["possession_fields"]))
    for word in _str_list(section.get("banned_words")):
        rules.banned_words.setdefault(word, "book.yaml")
    for path, front_matter in style_docs:
        for word in _str_list((front_matter or {}).get("banned_words")):
            rules.banned_words.setdefault(word, path)
        quotes = (front_matter or {}).get("quotes")
        if quotes is not None:
            if str(quotes) in QUOTE_PAIRS:
                rules.quotes, rules.quotes_source = str(quotes), path
            else:
                rules.problems.append(f"{path} 的 quotes 应为 {'、'.join(QUOTE_PAIRS)} 之一，实际为 {quotes!r}")
    return rules


# ── the realm ladder ───────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Rank:
    realm: int  # index in the ladder
    level: int | None  # index in the realm's levels; None when the text names the realm only
    text: str

    def position(self, rules: Rules, *, low: bool) -> int:
        """Position in the flattened ladder; a bare realm is its first level (``low``) or its last."""
        offset = sum(max(1, len(r.levels)) for r in rules.realms[: self.realm])
        levels = max(1, len(rules.realms[self.realm].levels))
        if self.level is not None:
            return offset + self.level
        return offset if low else offset + levels - 1


def realm_pattern(rules: Rules) -> re.Pattern | None:
    """A regex of every realm word of the ladder, longest alternatives first (``炼气三层`` before ``炼气``)."""
    if not rules.realms:
        return None
    alternatives = []
    for realm in rules.realms:
        levels = "|".join(re.escape(level) for level in sorted(realm.levels, key=len, reverse=True))
        tail = f"(?:{levels})?" if levels else ""
        alternatives.append(f"{re.escape(realm.name)}{tail}")
    alternatives.sort(key=len, reverse=True)
    return re.compile("|".join(alternatives))


def realm_parse(rules: Rules, text: Any) -> Rank | None:
    """The rank of a realm word (``筑基中期``), or None when it is not on the ladder."""
    value = str(text or "").strip()
    best: Rank | None = None
    for index, realm in enumerate(rules.realms):
        if not value.startswith(realm.name):
            continue
        rest = value[len(realm.name) :].strip()
        level = next((i for i, name in enumerate(realm.levels) if rest.startswith(name)), None) if rest else None
        rank = Rank(realm=index, level=level, text=value)
        # the longest realm name that prefixes the value wins (元婴 vs 元婴真君 as two realms)
        if best is None or len(realm.name) > len(rules.realms[best.realm].name):
            best = rank
    return best
