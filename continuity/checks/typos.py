"""name_typo: a homophone or a one-character variant of a known character's name."""

import bisect
import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import ahocorasick

from continuity.canon import CHARACTER, Canon
from continuity.checks import lexicon
from continuity.checks.clauses import edge_name, is_function_char, is_personal_name
from continuity.checks.common import CJK, INFO, WARNING, Mentions, finding
from continuity.draft import Draft


class _Syllables(dict):
    """char → one private-use character per tone-less pinyin syllable ("\x00" for a non-CJK char), for
    ``str.translate``: a text's syllable string has the text's offsets, so a homophone of a name is a
    plain substring of it and the scan runs in C instead of a Python loop per character."""

    def __init__(self) -> None:
        super().__init__()
        self.codes: dict[str, str] = {}
        self.lock = threading.Lock()

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if not CJK.match(char):
            return self.setdefault(code, "\x00")
        # Imported on first use: pypinyin's dictionaries take ~0.2 s to load, and this module is imported by
        # the read registry (continuity-chapters), so by every `story` process.
        from pypinyin import lazy_pinyin  # noqa: PLC0415

        syllable = lazy_pinyin(char)[0]
        with self.lock:  # two threads must never give two syllables one code
            # the Basic Multilingual Plane's private use area: the syllable string stays as compact as
            # the prose (a character past it counts as having no syllable)
            fresh = chr(0xE000 + len(self.codes)) if len(self.codes) < 0x1900 else "\x00"
            value = self.codes.setdefault(syllable, fresh)
            return self.setdefault(code, value)


_SYLLABLES = _Syllables()
# The same mapping as a list over the Basic Multilingual Plane, filled as characters are met (a list
# is indexed about twice as fast as the dict): a CJK character not met yet is None, which
# ``str.translate`` deletes, so a shorter result tells that the table needs filling first.
_TABLE: list[str | None] = ["\x00"] * 0x3400 + [None] * (0xA000 - 0x3400) + ["\x00"] * (0x10000 - 0xA000)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _syllables(text: str) -> str:
    if _ASTRAL.search(text):  # past the table (translate would leave such characters as they are)
        return text.translate(_SYLLABLES)
    out = text.translate(_TABLE)
    if len(out) != len(text):
        for char in set(text):
            if _TABLE[ord(char)] is None:
                _TABLE[ord(char)] = _SYLLABLES[ord(char)]
        out = text.translate(_TABLE)
    return out


@dataclass
class _TypoIndex:
    homophones: dict[str, list[str]]  # syllable string → names
    near: dict[int, dict[str, list[str]]]  # length → name with one character (not the first) as "?" → names
    sounds: Any  # automaton over syllable strings: where a homophone of a name may start
    # a regex matching (one character, the rest in a lookahead) where a near name's first two
    # characters (first and second, or first and third) start: the regex engine skips to a possible
    # first character in C (faster than automaton passes over the prose and its even / odd characters)
    pairs: Any
    lengths: list[int]  # the lengths of the variants looked for, longest first
    # a known name → the longer character names it begins (二郎 → 二郎神): 二郎身 is masked as 二郎 + 身
    extends: dict[str, list[str]]


def _automaton(words: dict[str, Any]) -> Any:
    if not words:
        return None
    automaton = ahocorasick.Automaton()
    for word, value in words.items():
        automaton.add_word(word, value)
    automaton.make_automaton()
    return automaton


def _typo_index(canon: Canon) -> _TypoIndex:
    """The names a typo may be a variant of, and what finds where a variant may start; built once per canon."""
    cache = getattr(canon, "_typo_index", None)
    if cache is not None:
        return cache
    homophones: dict[str, list[str]] = {}
    near: dict[int, dict[str, list[str]]] = {}
    pairs: set[str] = set()
    for entity in canon.entities.values():
        if entity.type != CHARACTER:
            continue
        for name in entity.names:
            if len(name) < 2 or len(name) > 6 or not all(CJK.match(c) for c in name):
                continue
            # a name without the surname (公瑾, 卧龙, 及时雨) is matched whole, never as a typo's base:
            # split as surname + given name it would make 主公今日 a typo of 公瑾
            if name[0] != entity.name[0]:
                continue
            homophones.setdefault(_syllables(name), []).append(name)
            if len(name) >= 3:
                for i in range(1, len(name)):
                    near.setdefault(len(name), {}).setdefault(name[:i] + "?" + name[i + 1 :], []).append(name)
                # one character off, never the first: the variant keeps the first and the second
                # character, or (the second changed) the first and the third
                pairs.update((name[:2], name[0] + name[2]))
    extends: dict[str, list[str]] = {}
    known = canon.known_names()
    for longer in sorted({n for names in homophones.values() for n in names}):
        for cut in (1, 2):
            if len(longer) - cut >= 2 and longer[:-cut] in known:
                extends.setdefault(longer[:-cut], []).append(longer)
    index = _TypoIndex(
        extends=extends,
        homophones=homophones,
        near=near,
        sounds=_automaton({key: len(key) for key in homophones}),
        pairs=_pairs_regex(pairs),
        lengths=sorted({len(k) for k in homophones} | set(near), reverse=True),
    )
    canon._typo_index = index  # type: ignore[attr-defined]
    return index


def _pairs_regex(pairs: Iterable[str]) -> re.Pattern | None:
    """A regex matching the first character of a pair where the pair starts, its second character
    next or one further (in a lookahead): one branch per first character."""
    seconds: dict[str, set[str]] = {}
    for pair in pairs:
        seconds.setdefault(pair[0], set()).add(pair[1])
    if not seconds:
        return None
    branches = []
    for first, chars in sorted(seconds.items()):
        chars = "".join(map(re.escape, sorted(chars)))
        branches.append(f"{re.escape(first)}(?=[{chars}]|.[{chars}])")
    return re.compile("|".join(branches), re.DOTALL)


def _typo_starts(index: _TypoIndex, masked: str, syllables: str) -> list[int]:
    """Every offset where a homophone or a one-off variant of a name may start (a superset: the scan
    decides), in the prose with its known names masked out, found in C: where a homophone's syllables
    start in the syllable string, where a first-and-second pair starts in the prose, where a
    first-and-third pair does (the lookahead skips the character between)."""
    starts = set()
    if index.sounds is not None:
        starts.update(end - length + 1 for end, length in index.sounds.iter(syllables))
    if index.pairs is not None:
        starts.update(match.start() for match in index.pairs.finditer(masked))
    return sorted(starts)


def _masked(prose: str, spans: list[tuple[int, int, str]]) -> str:
    """The prose with every known name blanked to NULs (same offsets): a name is never its own typo."""
    parts, pos = [], 0
    for start, end, _ in spans:
        parts.append(prose[pos:start])
        parts.append("\x00" * (end - start))
        pos = end
    parts.append(prose[pos:])
    return "".join(parts)


FUNCTION_CHARS = frozenset(
    "的了是在说道笑着和与把被也又就都而且向对从给让叫问看听想吗呢吧啊呀么哪那这个们来去上下里中不没有很太还再才便已"
)


_WORDS: dict[str, int] | None = None


def _words() -> dict[str, int]:
    """jieba's dictionary (word → frequency), loaded on first use (~1 s, ~60 MB): only a draft with a
    candidate typo asks."""
    global _WORDS
    if _WORDS is None:
        import jieba  # noqa: PLC0415

        jieba.setLogLevel(logging.WARNING)
        jieba.dt.check_initialized()
        _WORDS = jieba.dt.FREQ
    return _WORDS


def _cut(text: str) -> list[str]:
    """The dictionary's segmentation of ``text`` (no HMM: only words the dictionary knows join)."""
    import jieba  # noqa: PLC0415

    _words()
    return jieba.dt.lcut(text, HMM=False)


def _word_at(text: str, start: int) -> bool:
    """Whether a common word of two to four characters starts at ``text[start]`` (jieba's dictionary:
    身边 in 二郎身边 is a word, 身走 in 二郎身走了进来 is not)."""
    return any(lexicon.frequency(text[start : start + n]) > 0 for n in (2, 3, 4) if start + n <= len(text))


def _extended_typos(
    index: _TypoIndex, prose: str, syllables: str, spans: list[tuple[int, int, str]], known: set[str]
) -> list[tuple[int, int, str]]:
    """(start, end, name) of a known name run on by a homophone of a longer name's rest (二郎身 for
    二郎神, 二郎 being a name too), unless the rest begins a word (二郎身边). ``syllables`` is the
    masked prose's: a rest running into another name has NULs."""
    out = []
    extends = index.extends
    for start, end, name in spans:
        if name not in extends:
            continue
        for longer in extends[name]:
            stop = end + len(longer) - len(name)
            if stop > len(prose) or prose[start:stop] in known:
                continue
            rest = syllables[end:stop]
            if "\x00" in rest or rest != _syllables(longer[len(name) :]) or _word_at(prose, end):
                continue
            out.append((start, stop, longer))
            break
    return out


def check_typos(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    index = _typo_index(canon)
    homophones, near = index.homophones, index.near
    if not homophones:
        return []
    known = canon.known_names()
    prose = draft.prose
    # the known names are masked out (their syllables are NULs, never part of a key); ``covered``
    # marks the variants found, so that a variant is one finding, not also its shorter pieces
    covered = bytearray(len(prose))
    lengths = index.lengths
    found, seen = [], set()
    masked = _masked(prose, mentions.spans)
    syllables = _syllables(masked)
    if index.extends and not index.extends.keys().isdisjoint(mentions.names()):
        for i, j, name in _extended_typos(index, prose, syllables, mentions.spans, known):
            if (prose[i:j], name) not in seen:
                seen.add((prose[i:j], name))
                covered[i:j] = b"\x01" * (j - i)
                found.append(_typo_finding(draft, canon, mentions, i, j, name, WARNING))
        found = [f for f in found if f is not None]
    for i in _typo_starts(index, masked, syllables):
        if covered[i]:
            continue
        for length in lengths:
            j = i + length
            if j > len(prose):
                continue
            key = syllables[i:j]
            if "\x00" in key or any(covered[i:j]):
                continue
            variant = prose[i:j]
            if variant in known:
                continue
            names = [n for n in homophones.get(key, []) if length >= 3 or n[0] == variant[0]]
            severity = WARNING
            if not names and length in near:
                candidates = near[length]
                names = [
                    n
                    for k in range(1, length)
                    for n in candidates.get(variant[:k] + "?" + variant[k + 1 :], [])
                    if variant[k] not in FUNCTION_CHARS
                ]
                severity = INFO
            if not names or (variant, names[0]) in seen:
                continue
            band = _typo_plausible(prose, draft, i, j, names[0], severity)
            if band is None:
                continue
            seen.add((variant, names[0]))
            covered[i:j] = b"\x01" * (j - i)
            typo = _typo_finding(draft, canon, mentions, i, j, names[0], band)
            if typo is not None:
                found.append(typo)
    return found


def _typo_plausible(prose: str, draft: Draft, i: int, j: int, name: str, severity: str) -> str | None:
    """The band ``prose[i:j]`` may be a misspelt ``name`` in (None: no typo): no word of the dictionary,
    its first character no word's tail in its sentence's segmentation (主公今日 holds no 公今), no word
    starting with it or held in it (林教师: 教师), and, for a one-character variant, the changed character
    no word with its neighbour (白日间: 日间) but a describing one (孟婆娑: 婆娑); a two-character variant's changed character no function
    character (马中 is 马 + 中). A variant the sentence's segmentation across its line breaks rules out
    (an e-book wrapped at a fixed width: 做别⏎样之事 is 别样 + 之 + 事), but its line's does not, is unsure:
    an info (the line before may be a list or a verse that ends without a mark)."""
    variant = prose[i:j]
    if lexicon.frequency(variant) > 0:
        return None
    changed = [k for k in range(len(variant)) if k >= len(name) or variant[k] != name[k]]
    # before the segmentation (a cut per candidate costs more than the tag once the tagger is loaded)
    if len(variant) == 2 and any(variant[k] in FUNCTION_CHARS or is_function_char(variant[k]) for k in changed):
        return None
    if severity == INFO:
        for k in changed:
            for a, b in ((i + k - 1, i + k + 1), (i + k, i + k + 2)):
                pair = prose[max(a, 0) : b]
                if len(pair) == 2 and pair not in name and lexicon.frequency(pair) > 0 and not _describing(pair):
                    return None
    line_start, line_end = draft.sentence(i, j)
    line_start, line_end = max(line_start, i - 40), min(line_end, j + 40)
    if _cut_rules_out(prose, i, j, name, line_start, line_end):
        return None
    # the sentence across line breaks (at most 40 characters each side)
    wide_start = max(max(prose.rfind(mark, max(0, i - 40), i) + 1 for mark in SENTENCE_ENDS), i - 40, 0)
    ends = [k for k in (prose.find(mark, j, j + 40) for mark in SENTENCE_ENDS) if k != -1]
    wide_end = min([*ends, j + 40, len(prose)])
    if (wide_start, wide_end) != (line_start, line_end) and _cut_rules_out(prose, i, j, name, wide_start, wide_end):
        return INFO
    return severity


def _describing(word: str) -> bool:
    """Whether the dictionary tags ``word`` an adjective or a state word (婆娑 z, 美丽 a): what a surname
    never heads as a way of naming someone, unlike a noun or a title (林教师, 王大哥)."""
    return lexicon.tag(word)[:1] in ("a", "z")


def _cut_rules_out(prose: str, i: int, j: int, name: str, lo: int, hi: int) -> bool:
    """Whether the segmentation of ``prose[lo:hi]`` (line breaks and indents left out) puts the variant
    ``prose[i:j]`` inside other words: its first character ends a word, a word starts with it or sits in it."""
    kept = [k for k in range(lo, hi) if not prose[k].isspace()]
    at = {k: n for n, k in enumerate(kept)}
    if i not in at or j - 1 not in at:
        return False
    i_, j_ = at[i], at[j - 1] + 1
    pos = 0
    for token in _cut("".join(prose[k] for k in kept)):
        start, pos = pos, pos + len(token)
        if start < i_ < pos:
            return True  # the variant's first character ends a word (主公今日: 主公)
        if len(token) >= 2 and start == i_ and not name.startswith(token):
            return True  # it starts a word (高卧隆中: 高卧)
        if len(token) >= 2 and i_ < start and pos <= j_ and token not in name and not _describing(token):
            return True  # it holds a word a surname may head (林教师: 教师), not a describing one (孟婆娑: 婆娑)
    return False


SENTENCE_ENDS = "。！？!?"
# what separates the items of a list of names (王英，张青，孙新 / 张青、孙二娘 / 关胜与花荣)
LIST_MARKS = frozenset("，,、和与及同")


def _own_name(draft: Draft, canon: Canon, mentions: Mentions, i: int, j: int, entity: Any, name_count: int) -> str:
    """Why ``prose[i:j]`` reads as a name of its own rather than a slip (empty: no reason): it stands in
    a list of names (a known name, or a list item the tagger reads as a personal name, beside it), or
    the name it resembles is not yet used in the book, this chapter included (张青 in 第56回, where 张清
    first appears in 第70回). Precision first: such a variant is at most an info."""
    prose = draft.prose
    if any(e == i for _, e, _ in mentions.spans) or any(s == j for s, _, _ in mentions.spans):
        return "紧挨已知人名"
    names = {n for _, _, n in mentions.spans}
    for item in (_list_item(prose, i - 1, -1), _list_item(prose, j, 1)):
        if item and (item in names or is_personal_name(item)):
            return f"与人名「{item}」并列"
    # a run of names without marks (邹渊邹润张青): the tagger reads the word just before as a name
    before = edge_name(prose[max(0, i - 6) : i], last=True)
    if before:
        return f"紧接人名「{before}」"
    if entity is not None and not name_count:
        chapter = mentions.chapter
        if not any(bisect.bisect_left(canon.chapters_with(n), chapter) for n in entity.names if len(n) >= 2):
            return f"「{entity.name}」本书前文尚未出现"
    return ""


def _list_item(prose: str, mark: int, step: int) -> str:
    """The whole list item (two to four characters) on the far side of a list mark at ``mark``, going
    ``step`` (−1: the item before it, 1: after it); empty when ``prose[mark]`` is no list mark."""
    if not 0 <= mark < len(prose) or prose[mark] not in LIST_MARKS:
        return ""
    pos, size = mark + step, 0
    while 0 <= pos < len(prose) and size < 5 and CJK.match(prose[pos]) and prose[pos] not in LIST_MARKS:
        pos, size = pos + step, size + 1
    whole = not (0 <= pos < len(prose)) or not CJK.match(prose[pos]) or prose[pos] in LIST_MARKS
    if not whole or not 2 <= size <= 4:
        return ""
    return prose[mark + 1 : pos] if step == 1 else prose[pos + 1 : mark]


def _typo_finding(
    draft: Draft, canon: Canon, mentions: Mentions, i: int, j: int, name: str, severity: str
) -> dict[str, Any] | None:
    prose = draft.prose
    variant = prose[i:j]
    entity = mentions.who(name) or next((e for e in canon.entities.values() if name in e.names), None)
    evidence = {"chapter": None, "file": entity.source_path if entity else "", "line": None}
    if entity is not None:
        evidence["line"] = canon.source_line(entity.source_path, name)
    how = "同音" if severity == WARNING else "一字之差"
    evidence["fact"] = f"已知人名「{name}」" + (f"（{entity.name}）" if entity and entity.name != name else "")
    places, at = [], prose.find(variant)
    while at != -1:
        places.append(at)
        at = prose.find(variant, at + len(variant))
    lines = "、".join(str(line) for line in dict.fromkeys(draft.line_of(at) for at in places[:3]))
    where = f"本章出现 {len(places)} 次（第 {lines} 行" + (" 等" if len(places) > 3 else "") + "）"
    # the book's own spelling (used again and again, or in earlier chapters): a new name, not a typo
    name_count = sum(1 for _, _, n in mentions.spans if entity is not None and n in entity.names)
    earlier = bisect.bisect_left(canon.chapters_with(variant), mentions.chapter)
    if earlier >= 2:
        return None  # the book's own name: asked about once already, when it was used the second time
    # a slip is rarely made again in another chapter: a variant used before is a name of its own (张毅 beside 张翼)
    own = earlier >= 1 or (len(places) >= 3 and len(places) >= name_count)
    # only a warning asks why it may be a name of its own (a POS cut of its neighbourhood)
    why = "" if own or severity == INFO else _own_name(draft, canon, mentions, i, j, entity, name_count)
    if own or why:
        evidence["fact"] += f"；「{variant}」此前 {earlier} 章也用过" + (f"；{why}" if why else "")
        return finding(
            kind="name_typo",
            severity=INFO,
            draft=draft,
            start=i,
            end=j,
            term=variant,
            message=f"「{variant}」与已知人名「{name}」{how}，{where}，用得一贯：是一个新名字吗？",
            evidence=evidence,
            suggestion=f"若是新人物，请登记角色卡；若就是{name}，把「{variant}」登记为别名或统一改为「{name}」",
        )
    return finding(
        kind="name_typo",
        severity=severity,
        draft=draft,
        start=i,
        end=j,
        term=variant,
        message=f"「{variant}」与已知人名「{name}」{how}，{where}",
        evidence=evidence,
        suggestion=f"若指{name}，改为「{name}」；若是新人物，请先登记",
    )
