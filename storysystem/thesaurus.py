"""The genre thesaurus (seed/题材词表.yaml, or the file of the ``route_thesaurus`` setting): concepts whose
words a request may use for a genre the library names otherwise, mapped to the routing rows they name;
and the negation of a request (不要虐 asks against 虐文), which the genre profiles
(storysystem/profiles.py) strip before scoring.
"""

import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kernel.exceptions import InvalidInput
from storysystem.conf import conf
from storysystem.search import FUNCTION_CHARS, ROUTE_NAME, Doc, split_multi

THESAURUS_FIELD = "题材词表"
SEED_THESAURUS = Path(__file__).resolve().parent / "seed" / "题材词表.yaml"
# How a concept name matches a routing row, strongest first: equal to a value of the column, or
# (weakest) contained in the row's genre name or an alias (赘婿 in 都市赘婿流).
_NAME_LEVELS = ((ROUTE_NAME, 5), ("题材别名", 4), ("关键词", 3), ("canonical_genre", 2))
_CONTAINED_IN = (ROUTE_NAME, "题材别名")


@dataclass(frozen=True)
class Concept:
    names: tuple[str, ...]
    words: tuple[str, ...]


_thesaurus_cache: dict[tuple[str, float], list[Concept]] = {}


def thesaurus_path() -> Path:
    configured = conf("route_thesaurus")
    return Path(configured) if configured else SEED_THESAURUS


def thesaurus_load(path: Path) -> list[Concept]:
    """The concepts of the thesaurus file at ``path`` (cached per file version). A broken file is
    an ``InvalidInput`` naming the file, and the line or the concept that is wrong."""
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError as exc:
        raise InvalidInput(f"题材词表 {path} 无法读取：{exc.strerror or exc}", extra={"file": str(path)}) from None
    cached = _thesaurus_cache.get(key)
    if cached is not None:
        return cached
    try:
        # libyaml when present: the pure-Python loader takes ~0.2 s for the seed's 2,000 words
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except UnicodeDecodeError:
        raise InvalidInput(f"题材词表 {path} 不是 UTF-8 文本", extra={"file": str(path)}) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"第 {mark.line + 1} 行" if mark else ""
        raise InvalidInput(
            f"题材词表 {path} {where}不是合法的 YAML：{getattr(exc, 'problem', None) or exc}",
            extra={"file": str(path), "line": mark.line + 1 if mark else None},
        ) from None
    concepts = data.get("concepts") if isinstance(data, dict) else None
    if not isinstance(concepts, list):
        raise InvalidInput(f"题材词表 {path} 缺少 concepts 列表", extra={"file": str(path)})
    out = []
    for i, item in enumerate(concepts):
        names = item.get("names") if isinstance(item, dict) else None
        words = item.get("words", []) if isinstance(item, dict) else None
        if not _str_list(names) or not names or not _str_list(words):
            raise InvalidInput(
                f"题材词表 {path} 的 concepts[{i}] 需要 names（非空的词列表）和 words（词列表）",
                extra={"file": str(path), "path": f"concepts[{i}]"},
            )
        clean = [str(w).strip().lower() for w in (*names, *words)]
        out.append(
            Concept(names=tuple(str(n).strip() for n in names), words=tuple(dict.fromkeys(w for w in clean if w)))
        )
    _thesaurus_cache.clear()
    _thesaurus_cache[key] = out
    return out


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str | int) and not isinstance(v, bool) for v in value)


def concept_rows(concept: Concept, rows: list[Doc]) -> list[tuple[int, str, str]]:
    """The routing rows a concept stands for, as (row index, column, row term): those its names
    match at the strongest level any row reaches (see ``_NAME_LEVELS``)."""
    best, found = 0, []
    for row_idx, row in enumerate(rows):
        fields = row.payload["fields"]
        values = {column: split_multi(fields.get(column, "")) for column, _ in _NAME_LEVELS}
        values["关键词"] = row.payload["keywords"]
        level, where = 0, ("", "")
        for name in concept.names:
            for column, strength in _NAME_LEVELS:
                if strength > level and name in values[column]:
                    level, where = strength, (column, name)
            if level < 1 and len(name) > 1:
                for column in _CONTAINED_IN:
                    hit = next((v for v in values[column] if name in v), None)
                    if hit:
                        level, where = 1, (column, hit)
                        break
        if level and level > best:
            best, found = level, []
        if level and level == best:
            found.append((row_idx, *where))
    return found


def thesaurus_map(
    *, mapped: list[tuple[Concept, list[tuple[int, str, str]]]]
) -> dict[str, list[tuple[int, float, str, str, str]]]:
    """Word -> its contributions to the routing rows. A word weighs more the longer it is (a
    longer phrase is a more specific premise); its weight is shared among the concepts listing
    it, and a concept's among the rows it maps to."""
    scale = float(conf("route_thesaurus_weight"))
    name_boost = float(conf("route_thesaurus_name_boost"))
    listing: Counter[str] = Counter(w for c, targets in mapped if targets for w in c.words)
    words: dict[str, list[tuple[int, float, str, str, str]]] = defaultdict(list)
    for concept, targets in mapped:
        named = {n.lower() for n in concept.names}
        for word in concept.words:
            if not targets:
                continue
            weight = scale * _word_weight(word) / listing[word] / len(targets)
            if word in named:
                weight *= name_boost  # the author named the genre itself (快穿, 赘婿)
            for row_idx, column, row_term in targets:
                words[word].append((row_idx, weight, concept.names[0], column, row_term))
    return dict(words)


def _word_weight(word: str) -> float:
    return {1: 0.5, 2: 1.0, 3: 1.5}.get(len(word), 2.0)


def thesaurus_spans(query: str, automaton: Any) -> list[tuple[str, list[tuple[int, int]]]]:
    """The thesaurus words occurring in ``query``, each with the spans (start, end) of
    ``query.lower()`` it covers: longest first, and a word inside a longer one already matched at
    that place is not counted again (上门 inside 上门女婿)."""
    if automaton is None:
        return []
    found = sorted(
        ((end - len(word) + 1, end + 1, word) for end, word in automaton.iter(query.lower())),
        key=lambda h: (h[0] - h[1], h[0]),
    )
    covered: list[tuple[int, int]] = []
    out: dict[str, list[tuple[int, int]]] = {}
    for start, end, word in found:
        if not any(a <= start and end <= b for a, b in covered):
            covered.append((start, end))
            out.setdefault(word, []).append((start, end))
    return sorted(out.items(), key=lambda w: (-len(w[0]), w[0]))


# ---------------------------------------------------------------- negation

# A cue that negates what follows: 不要虐 asks *against* 虐文. Only an author's preference is
# negated — a genre name, or a genre name's first character standing alone (虐 in 不要太虐了);
# a premise's own negation (他不能修炼, 没有灵根) is content and stays. 特别 and 别人 are no cue.
NEGATION = re.compile(
    r"(不要|不想|不用|不需要|不能|不可以|(?<![特区级性告离分个类派差识鉴])别(?![人的墅院处样])|拒绝|无需|避免|杜绝|少点)"
)
_NEGATION_REACH = 4
_SEPARATOR = re.compile(r"[\s,，。、；;：:！!？?]")
_INTENSIFIER = re.compile(r"(太|过于|那么|这么|很|要|再|一点|有|任何|是|写|写成|搞|搞成|弄成|变成)+")


def negation_strip(query: str, names: frozenset[str], guarded: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """``query`` with the preferences it negates blanked out, and what was negated: after a cue,
    a genre name within a few characters (别写成虐文), else a genre name's first character
    followed by nothing but a function character or the end (不要虐, 别太甜了). A cue inside a
    thesaurus word (不要回头 of a rule-horror notice) is content, not a negation."""
    text = query.lower()
    spans, negated = [], []
    kept = [(i, i + len(w)) for w in guarded if w in text for i in occurrences(text, w)]
    initials = {n[0] for n in names if n}
    for cue in NEGATION.finditer(text):
        if any(a <= cue.start() < b for a, b in (*spans, *kept)):
            continue
        start = cue.end()
        skip = _INTENSIFIER.match(text, start)
        if skip:
            start = skip.end()
        near = [(text.find(n, cue.end(), start + _NEGATION_REACH + len(n)), n) for n in names]
        near = [(i, n) for i, n in near if i >= 0 and not _SEPARATOR.search(text, cue.end(), i)]
        word = ""
        if near:
            i, word = min(near, key=lambda h: (h[0], -len(h[1])))
            start = i
        elif start < len(text) and text[start] in initials:
            after = text[start + 1 : start + 2]
            if not after or after in FUNCTION_CHARS or _SEPARATOR.match(after):
                word = text[start]
        if word:
            spans.append((cue.start(), start + len(word)))
            negated.append(word)
    if not spans:
        return query, []
    out, last = [], 0
    for a, b in spans:
        out += [query[last:a], " "]
        last = b
    out.append(query[last:])
    return "".join(out), negated


def occurrences(text: str, word: str) -> Iterator[int]:
    start = text.find(word)
    while start >= 0:
        yield start
        start = text.find(word, start + 1)
