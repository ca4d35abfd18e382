"""The finding kinds. Each check reads a parsed ``Draft`` and a ``Canon`` advanced to the chapter
before the draft's, and returns findings (plain dicts, Chinese text for the author).

The sentence-level rules are general Chinese grammar, not lists of this book's words: a speaker is a
name followed by a speech verb (张三道 / 张三冷笑道 / “……”张三说); an actor is a name at the head
of a clause followed by an action verb; a name after 想起 / 提起 / 当年 …, inside someone's quoted
speech, or followed by 的 is only mentioned. See docs/continuity.md for each kind."""

import bisect
import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import ahocorasick

from continuity.canon import CHARACTER, WEAK_HOOK, Canon, EntityRow
from continuity.rules import QUOTE_PAIRS, realm_parse, realm_pattern
from continuity.text import Draft

ERROR, WARNING, INFO = "error", "warning", "info"

KINDS = {
    "inactive_acts": "不能行动的角色在行动或说话",
    "realm_lower": "境界低于已有境界",
    "realm_jump": "境界跳级且无突破记录",
    "item_not_held": "使用已不在手中的物品",
    "alias_window": "别名在有效期外使用",
    "name_typo": "疑似人名错字",
    "secret_early": "读者尚不知的信息差提前出现",
    "pov_knowledge": "视角人物知道其不知的信息差",
    "banned_word": "文风禁用词",
    "quote_style": "引号与文风规定不符",
    "thread_unknown": "front matter 引用不存在的线索",
    "thread_closed": "推进或收尾已收尾的线索",
    "thread_not_open": "推进尚未开启的线索",
    "thread_due": "计划本章收尾的线索未收尾",
    "weak_hook_streak": "弱钩连续超过阈值",
}

SPEECH = re.compile(
    r"[^，。！？；：“”「」\n的之被]{0,6}?"
    r"(?:说道|问道|答道|喝道|笑道|叫道|喊道|骂道|叹道|吼道|怒道|低语|喃喃|开口|道|说|问|答|喝|吼|喊|骂|嚷)"
    r"(?=[：:，,。！？!?“「]|$)"
)
ACTION = re.compile(
    r"(?:[缓慢猛忽突默轻又再也便就才已却竟终还正刚立当])?(?:[缓慢猛忽突默轻]然|[缓慢轻]缓|猛地|忽地|一把|一步|随手|伸手)?"
    r"(?:起身|站起|转身|回头|抬头|低头|点头|摇头|皱眉|咬牙|冷笑|微笑|大笑|叹息|伸手|抬手|挥手|拱手|抱拳|拔剑|出手|出剑"
    r"|走|站|坐|跪|抬|伸|抓|握|挥|拔|看|望|盯|瞪|拿|取|递|推|拉|跑|跳|冲|扑|拍|按|踏|迈|抱|举|扔|掷|刺|劈|砍|踢|打|闪|退"
    r"|掠|跃|飞|睁|闭|吸|吐|笑|哭|叹|怒|抢|夺|接|扶|捏|攥|按|扬|摸|踹|拦|挡|迎)"
)
MENTION_ONLY = re.compile(
    r"想起|想到|记起|记得|回忆|回想|忆起|梦见|梦到|提起|提到|说起|谈起|念及|怀念|追忆|祭奠|悼念|纪念|听说|据说|传说|传闻"
    r"|当年|生前|昔日|曾经|从前|以前|那年|若是|如果|假如|要是|倘若|遗言|遗物|遗愿|坟|墓|灵位|牌位"
)
PAST_AFTER = re.compile(r"^(?:曾|曾经|当年|生前|在世|死前|临死|临终|从前|以前|的)")
REALM_PREDICATE = re.compile(
    r"^[^，。！？；“”]{0,6}?(?:已是|已经是|乃是|乃|是|达到|到了|晋入|踏入|突破到|突破至|突破了|升至|成为|跌落|跌回|只是|不过是|还是"
    r"|的修为|的境界|修为|境界)[^，。！？；“”]{0,3}$"
)
PAST_REALM = re.compile(r"曾|当年|以前|从前|那时|原本|本是|昔日|年前|早年")
BREAKTHROUGH = re.compile(r"突破|晋入|踏入|破境|晋升|冲破|迈入|进阶|晋阶|结丹|筑基成功|凝婴")
USE_VERB = re.compile(
    r"拔出|握着|握住|握紧|举起|取出|掏出|祭出|拿出|拿着|亮出|摸出|抽出|提着|捧着|捧出|扬起|挥动|挥起|挥舞|递出|展开|用|持|握|提|捏|攥|执|挥"
)
KNOWS = re.compile(r"知道|明白|清楚|心知|料到|猜到|认出|想到|早知|晓得")
ITEM_FOLLOWERS = frozenset("了着过的和与便就也又都")
OBJECT_MARKERS = frozenset("把将被向对给和与跟替让叫")
CLAUSE_BREAK = re.compile("[，,；;：:]")
CJK = re.compile(r"[\u3400-\u9fff]")


def finding(
    *,
    kind: str,
    severity: str,
    draft: Draft,
    start: int,
    end: int,
    term: str,
    message: str,
    evidence: dict[str, Any],
    suggestion: str,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "kind_label": KINDS[kind],
        "severity": severity,
        "line": draft.line_of(start),
        "quote": draft.quote(start, end),
        "term": term,
        "message": message,
        "evidence": evidence,
        "suggestion": suggestion,
        "waived": False,
    }


def _where(evidence: dict[str, Any]) -> str:
    parts = []
    if evidence.get("chapter"):
        parts.append(f"第{evidence['chapter']}章")
    if evidence.get("file"):
        parts.append(evidence["file"] + (f":{evidence['line']}" if evidence.get("line") else ""))
    return "，".join(parts) or "设定"


# ── names in the draft ─────────────────────────────────────────────────────────────────────────


class Mentions:
    """Every leftmost-longest name match of the draft, resolved at the draft's chapter."""

    def __init__(self, draft: Draft, canon: Canon, chapter: int) -> None:
        automaton = canon.matcher.automaton
        self.spans: list[tuple[int, int, str]] = (
            [(end - len(name) + 1, end + 1, name) for end, name in automaton.iter_long(draft.prose)]
            if automaton is not None and draft.prose
            else []
        )
        self._starts = [start for start, _, _ in self.spans]
        self.chapter = chapter
        self.canon = canon
        self._who: dict[tuple[str, tuple[str, ...]], EntityRow | None] = {}
        self._characters: list[tuple[int, int, str, EntityRow]] | None = None
        self._names: set[str] | None = None

    def names(self) -> set[str]:
        """The distinct names matched in the draft."""
        if self._names is None:
            self._names = {name for _, _, name in self.spans}
        return self._names

    def who(self, name: str, types: tuple[str, ...] = (CHARACTER,)) -> EntityRow | None:
        key = (name, types)
        if key not in self._who:
            self._who[key] = self.canon.entity_of(name, chapter=self.chapter, types=types)
        return self._who[key]

    def characters(self) -> list[tuple[int, int, str, EntityRow]]:
        """(start, end, name, entity) of every mention that names one character at the chapter."""
        if self._characters is None:
            of = {name: self.who(name) for name in self.names()}
            self._characters = [(s, e, n, of[n]) for s, e, n in self.spans if of[n] is not None]
        return self._characters

    def character_between(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self._starts, start)
        while i < len(self.spans) and self.spans[i][0] < end:
            s, e, n = self.spans[i]
            if e <= end and self.who(n) is not None:
                return True
            i += 1
        return False


def _acts(draft: Draft, start: int, end: int) -> bool:
    """Whether the name at prose[start:end] speaks or acts there (not merely mentioned)."""
    prose = draft.prose
    if draft.in_quote(start):
        return False
    after = prose[end : end + 14]
    if PAST_AFTER.match(after):
        return False
    clause = draft.clause_start(start)
    sentence_start, _ = draft.sentence(start)
    if MENTION_ONLY.search(prose[sentence_start:start]):
        return False
    prefix = prose[clause:start]
    if SPEECH.match(after):
        return len(prefix) <= 8
    if ACTION.match(after):
        return len(prefix) <= 2 or prefix.endswith("见")
    return False


def check_inactive(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    rules = canon.rules
    found = []
    revived = {op.ref for op in draft.tag_ops if op.field == "status" and not rules.inactive(op.value)}
    inactive = canon.inactive_pks
    for start, end, name, entity in mentions.characters():
        if entity.pk not in inactive or entity.entity_id in revived or name in revived:
            continue
        status = canon.states.get(entity.pk, {}).get("status")
        if not _acts(draft, start, end):
            continue
        evidence = canon.state_evidence(entity, "status", status)
        evidence["fact"] = f"{entity.name} 状态为「{status}」（截至第{canon.as_of}章）"
        found.append(
            finding(
                kind="inactive_acts",
                severity=ERROR,
                draft=draft,
                start=start,
                end=end,
                term=entity.name,
                message=f"{entity.name} 已「{status}」，却在本章行动或说话",
                evidence=evidence,
                suggestion=f"改为回忆或他人提及，或先写明{entity.name}的状态变化（{_where(evidence)}）",
            )
        )
    return found


def check_realms(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    rules = canon.rules
    pattern = realm_pattern(rules)
    if pattern is None:
        return []
    found = []
    raised = {}
    for op in draft.tag_ops:
        if op.field == rules.realm_field and op.op == "set":
            raised[op.ref] = realm_parse(rules, op.value)
    chars = list(mentions.characters())
    for match in pattern.finditer(draft.prose):
        start, end = match.span()
        if draft.in_quote(start):
            continue
        s_start, s_end = draft.sentence(start, end)
        sentence = draft.prose[s_start:s_end]
        if PAST_REALM.search(sentence):
            continue
        owner = None
        before = [c for c in chars if s_start <= c[0] and c[1] <= start]
        if before and REALM_PREDICATE.match(draft.prose[before[-1][1] : start]):
            owner = before[-1]
        else:
            after = [c for c in chars if end <= c[0] and c[1] <= s_end]
            if after and draft.prose[end : after[0][0]] in ("的", "修士", "的修士"):
                owner = after[0]
        if owner is None:
            continue
        entity = owner[3]
        held_text = canon.states.get(entity.pk, {}).get(rules.realm_field)
        held, said = realm_parse(rules, held_text), realm_parse(rules, match.group(0))
        if held is None or said is None:
            continue
        tag_rank = raised.get(entity.entity_id) or raised.get(entity.name)
        if tag_rank is None:
            tag_rank = next((raised[n] for n in entity.names if n in raised), None)
        evidence = canon.state_evidence(entity, rules.realm_field, held_text)
        evidence["fact"] = f"{entity.name} 境界为「{held_text}」（截至第{canon.as_of}章）"
        if said.position(rules, low=False) < held.position(rules, low=True):
            if tag_rank is not None and said.position(rules, low=False) >= tag_rank.position(rules, low=True):
                continue
            found.append(
                finding(
                    kind="realm_lower",
                    severity=ERROR,
                    draft=draft,
                    start=start,
                    end=end,
                    term=f"{entity.name}:{match.group(0)}",
                    message=f"{entity.name} 已是「{held_text}」，本章写作「{match.group(0)}」",
                    evidence=evidence,
                    suggestion=f"改为「{held_text}」或其上；若是跌境，请写明并记录状态变化",
                )
            )
            continue
        jump = said.position(rules, low=True) - held.position(rules, low=False)
        recorded = tag_rank is not None or BREAKTHROUGH.search(sentence)
        if jump > 1 and not recorded:
            found.append(
                finding(
                    kind="realm_jump",
                    severity=WARNING,
                    draft=draft,
                    start=start,
                    end=end,
                    term=f"{entity.name}:{match.group(0)}",
                    message=f"{entity.name} 由「{held_text}」跳到「{match.group(0)}」（{jump} 级），没有突破记录",
                    evidence=evidence,
                    suggestion="补写突破过程并用 <entity-update> 记录境界，或改回当前境界",
                )
            )
    return found


def check_items(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    found = []
    gained = {(op.ref, canon.item_canonical(str(op.value))) for op in draft.tag_ops if op.op in ("add", "set")}
    item_spans = [(start, end, name, canon.item_names[name]) for start, end, name in canon.items_in(draft.prose)]
    if not item_spans:
        return []
    chars = mentions.characters()
    ends = [c[1] for c in chars]
    for start, end, _name, item in item_spans:
        # a name running on into more characters is the head of another word (玉月 in 玉月符)
        if draft.in_quote(start) or (
            end < len(draft.prose) and CJK.match(draft.prose[end]) and draft.prose[end] not in ITEM_FOLLOWERS
        ):
            continue
        # the nearest character mention ending before the item, in its sentence, at most 12 away
        # (the cheap tests first: most items are nobody's)
        k = bisect.bisect_right(ends, start) - 1
        if k < 0 or start - chars[k][1] > 12:
            continue
        c_start, c_end, _, user = chars[k]
        between = draft.prose[c_end:start]
        # the user is the clause's subject: not across a comma, not the object of 把 / 被 / 向 …
        if not USE_VERB.search(between) or "的" in between or CLAUSE_BREAK.search(between):
            continue
        if draft.prose[c_start - 1 : c_start] in OBJECT_MARKERS or mentions.character_between(c_end, start):
            continue
        s_start, _ = draft.sentence(start)
        if c_start < s_start or MENTION_ONLY.search(draft.prose[s_start:start]) or draft.in_quote(c_start):
            continue
        if item in canon.held(user.pk) or (user.entity_id, item) in gained or (user.name, item) in gained:
            continue
        lost = canon.lost.get((user.pk, item))
        holder = None if lost is not None else canon.first_holder(item, besides=user.pk)
        if lost is not None:
            evidence = canon.chapter_evidence(lost, entity=user, value=item)
            evidence["fact"] = f"{user.name} 于第{lost}章失去「{item}」"
            severity, message = ERROR, f"{user.name} 已不持有「{item}」（第{lost}章起），本章却在使用"
        elif holder is not None:
            evidence = canon.holding_evidence(holder, item)
            evidence["fact"] = f"「{item}」截至第{canon.as_of}章在 {holder.name} 手中"
            severity, message = WARNING, f"「{item}」在 {holder.name} 手中，{user.name} 却在使用"
        else:
            continue
        found.append(
            finding(
                kind="item_not_held",
                severity=severity,
                draft=draft,
                start=c_start,
                end=end,
                term=f"{user.name}:{item}",
                message=message,
                evidence=evidence,
                suggestion="改由持有者使用，或先写明物品如何回到此人手中并记录持有物变化",
            )
        )
    return found


def check_alias_windows(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    found, seen = [], Counter()
    chapter = mentions.chapter
    windowed = canon.windowed_names()
    if windowed.isdisjoint(mentions.names()):
        return found
    for start, end, name in mentions.spans:
        if name not in windowed or canon.matcher.candidates(name, chapter):
            continue
        rows = [r for r in canon.aliases.get(name, []) if r[0] in canon.entities]
        if not rows:
            continue
        pk, vf, vt, note, _, _ = rows[0]
        entity = canon.entities[pk]
        seen[name] += 1
        window = f"第{vf}章起" if vf and not vt else f"至第{vt}章" if vt and not vf else f"第{vf}–{vt}章"
        line = canon.source_line(entity.source_path, name)
        evidence = {"chapter": None, "file": entity.source_path, "line": line}
        if line is None:  # declared by a tag in a chapter: the one its window opens in, else any
            numbers = [vf] if vf in canon.chapters else []
            for number in [*numbers, *(n for n in canon.chapters if n != vf)]:
                tag = next((t for t in canon.tags_of(number) if f'alias="{name}"' in t.get("text", "")), None)
                if tag is not None:
                    evidence = {
                        "chapter": number,
                        "file": canon.chapters[number]["source_path"],
                        "line": tag.get("line"),
                    }
                    break
        evidence["fact"] = f"别名「{name}」指 {entity.name}，有效期 {window}" + (f"（{note}）" if note else "")
        found.append(
            finding(
                kind="alias_window",
                severity=WARNING,
                draft=draft,
                start=start,
                end=end,
                term=name,
                message=f"第{chapter}章使用了别名「{name}」，但它只在{window}有效",
                evidence=evidence,
                suggestion=f"改用「{entity.name}」或此时有效的称呼",
            )
        )
    return found


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


def _word_at(text: str, start: int) -> bool:
    """Whether a common word of two to four characters starts at ``text[start]`` (jieba's dictionary:
    身边 in 二郎身边 is a word, 身走 in 二郎身走了进来 is not)."""
    global _WORDS
    if _WORDS is None:
        # Loaded on first use (~1 s, ~60 MB): only a known name followed by a homophone of a longer
        # name's rest asks, and most drafts never do.
        import jieba  # noqa: PLC0415

        jieba.setLogLevel(logging.WARNING)
        jieba.dt.check_initialized()
        _WORDS = jieba.dt.FREQ
    return any((_WORDS.get(text[start : start + n]) or 0) > 0 for n in (2, 3, 4) if start + n <= len(text))


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
            seen.add((variant, names[0]))
            covered[i:j] = b"\x01" * (j - i)
            found.append(_typo_finding(draft, canon, mentions, i, j, names[0], severity))
    return found


def _typo_finding(
    draft: Draft, canon: Canon, mentions: Mentions, i: int, j: int, name: str, severity: str
) -> dict[str, Any]:
    prose = draft.prose
    variant = prose[i:j]
    entity = mentions.who(name) or next((e for e in canon.entities.values() if name in e.names), None)
    evidence = {"chapter": None, "file": entity.source_path if entity else "", "line": None}
    if entity is not None:
        evidence["line"] = canon.source_line(entity.source_path, name)
    how = "同音" if severity == WARNING else "一字之差"
    evidence["fact"] = f"已知人名「{name}」" + (f"（{entity.name}）" if entity and entity.name != name else "")
    count = prose.count(variant)
    return finding(
        kind="name_typo",
        severity=severity,
        draft=draft,
        start=i,
        end=j,
        term=variant,
        message=f"「{variant}」与已知人名「{name}」{how}，本章出现 {count} 次",
        evidence=evidence,
        suggestion=f"若指{name}，改为「{name}」；若是新人物，请先登记",
    )


def _secret_known(secret, chapter: int) -> bool:
    if secret.reader_told_chapter is not None:
        return secret.reader_told_chapter <= chapter
    return bool(secret.reader_knows)


def _knowers(canon: Canon, secret, chapter: int) -> set[int]:
    pks = set()
    for entry in secret.known_to or []:
        name, since = (entry, None) if isinstance(entry, str) else (entry.get("name"), entry.get("since"))
        since = since if since is not None else secret.registered_chapter
        if since is not None and since > chapter:
            continue
        entity = canon.entity_of(str(name or ""), chapter=chapter) or canon.entity_of(str(name or ""), chapter=10**7)
        if entity is not None:
            pks.add(entity.pk)
    return pks


def _is_name(canon: Canon, keyword: str, chapter: int) -> bool:
    """Whether the keyword is a name the reader already uses at ``chapter``: an entity's name or a
    (non-generic) alias inside its window."""
    entries = canon.matcher.names.get(keyword)
    if not entries:
        return False
    timeless = all(e[2] is None and e[3] is None for e in entries)
    if timeless and keyword in canon.name_keywords:
        return canon.name_keywords[keyword]
    value = any(not generic and pk in canon.entities for pk, _, generic in canon.matcher.candidates(keyword, chapter))
    if timeless:
        canon.name_keywords[keyword] = value
    return value


def _secret_evidence(canon: Canon, secret, keyword: str) -> dict[str, Any]:
    line = canon.source_line(secret.source_path, "reader_told") or canon.source_line(secret.source_path, keyword)
    return {"chapter": None, "file": secret.source_path, "line": line}


def _names_only(canon: Canon, secret, chapter: int) -> bool:
    """Whether every keyword of the secret is a name at ``chapter`` (then names are its only evidence)."""
    return all(_is_name(canon, k, chapter) for k in canon.keywords_of(secret))


def _cooccurring(draft: Draft, keyword: str, starts: list[int], keywords: list[str]) -> list[int]:
    """The hits of ``keyword`` in a sentence with another of ``keywords``."""
    out = []
    for start in starts:
        s_start, s_end = draft.sentence(start, start + len(keyword))
        sentence = draft.prose[s_start:s_end]
        if any(other != keyword and other in sentence for other in keywords):
            out.append(start)
    return out


def _keyword_hits(draft: Draft, canon: Canon) -> dict[str, list[int]]:
    """keyword → start offsets (non-overlapping, like ``re.finditer``), in one pass over the draft."""
    automaton = canon.secret_keywords()
    hits: dict[str, list[int]] = {}
    if automaton is None:
        return hits
    last_end: dict[str, int] = {}
    for end, keyword in automaton.iter(draft.prose):
        start = end - len(keyword) + 1
        if start < last_end.get(keyword, 0):
            continue
        last_end[keyword] = end + 1
        hits.setdefault(keyword, []).append(start)
    return hits


def _shows_knowing(draft: Draft, start: int, end: int, cache: dict[tuple[int, int], bool]) -> bool:
    """Whether the keyword at prose[start:end] is narrated (not quoted) in a sentence that shows knowing."""
    value = cache.get((start, end))
    if value is None:
        if draft.in_quote(start):
            value = False
        else:
            s_start, s_end = draft.sentence(start, end)
            value = KNOWS.search(draft.prose[s_start:s_end]) is not None
        cache[(start, end)] = value
    return value


def check_secrets(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    """A keyword of a secret the reader is not told yet (secret_early); a keyword the point-of-view
    character shows knowledge of without being a knower (pov_knowledge).

    A keyword that is only a character's (or a place's …) name says who or where a secret is about,
    not what it is: 东方易勇 in a chapter does not tell that 东方易勇身怀异宝. Such a name counts
    only for a secret whose keywords are all names, and then only in a sentence with another of them."""
    chapter = mentions.chapter
    found = []
    pov = mentions.who(draft.perspective) if draft.perspective else None
    hits = _keyword_hits(draft, canon)
    # keyword → (first evidence offset, count, evidence, the indexes of the secrets it leaks): one finding per keyword
    early: dict[str, tuple[int, int, dict[str, Any], list[int]]] = {}
    knowers: dict[int, set[int]] = {}
    shows: dict[tuple[int, int], bool] = {}  # (start, end) → _shows_knowing, the same for every secret of a keyword
    told_at = canon.told_at()
    for keyword in sorted(hits, key=lambda k: canon.keyword_owners[k][0]):
        owners = canon.keyword_owners[keyword]
        if pov is None:
            # without a point of view only the secrets the reader does not know yet matter
            owners = [index for index in owners if told_at[index] > chapter]
            if not owners:
                continue
        name = _is_name(canon, keyword, chapter)
        if not name:
            # the common case, without a Python step per secret: every secret the reader does not know
            # yet leaks at every hit (the first one's evidence); the known ones matter only for a point of view
            unknown = owners if pov is None else [index for index in owners if told_at[index] > chapter]
            if unknown:
                early[keyword] = (
                    hits[keyword][0],
                    len(hits[keyword]),
                    _secret_evidence(canon, canon.secrets[unknown[0]], keyword),
                    unknown,
                )
            if pov is None or len(unknown) == len(owners):
                continue
        for index in owners:
            secret = canon.secrets[index]
            reader_knows = told_at[index] <= chapter
            starts = hits[keyword]
            if not name and not reader_knows:
                continue  # already in ``early``
            if name:
                if not _names_only(canon, secret, chapter):
                    continue
                starts = _cooccurring(draft, keyword, starts, canon.keywords_of(secret))
                if not starts:
                    continue
            if not reader_knows:
                if keyword in early:
                    early[keyword][3].append(index)
                else:
                    early[keyword] = (starts[0], len(starts), _secret_evidence(canon, secret, keyword), [index])
                continue
            for start in starts:
                end = start + len(keyword)
                if not _shows_knowing(draft, start, end, shows):
                    continue
                if index not in knowers:
                    knowers[index] = _knowers(canon, secret, chapter)
                if pov.pk in knowers[index]:
                    break
                evidence = _secret_evidence(canon, secret, keyword)
                evidence["line"] = canon.source_line(secret.source_path, "known_to")
                evidence["fact"] = f"{secret.secret_id}「{secret.title}」的知情者不含 {pov.name}（截至第{chapter}章）"
                found.append(
                    finding(
                        kind="pov_knowledge",
                        severity=WARNING,
                        draft=draft,
                        start=start,
                        end=end,
                        term=keyword,
                        message=f"视角人物 {pov.name} 尚不知 {secret.secret_id}，叙述却显出知情",
                        evidence=evidence,
                        suggestion=f"改为{pov.name}的猜测或由知情者说出，或在信息差的 known_to 中补上 {pov.name}",
                    )
                )
    for keyword, (start, count, evidence, indexes) in early.items():
        key = (keyword, tuple(indexes))
        texts = canon.leak_texts.get(key)
        if texts is None:
            secrets = [canon.secrets[index] for index in indexes]
            texts = canon.leak_texts[key] = (
                "、".join(secret.secret_id for secret in secrets),
                "；".join(
                    f"{secret.secret_id}「{secret.title}」读者得知于"
                    + (f"第{secret.reader_told_chapter}章" if secret.reader_told_chapter else "（尚未安排）")
                    for secret in secrets
                ),
            )
        ids, evidence["fact"] = texts
        found.append(
            finding(
                kind="secret_early",
                severity=WARNING,
                draft=draft,
                start=start,
                end=start + len(keyword),
                term=keyword,
                message=f"关键词「{keyword}」泄露信息差 {ids}，读者此时尚不知情（本章 {count} 处）",
                evidence=evidence,
                suggestion="删去或改写关键词；若本章就是揭晓之章，请更新信息差的 reader_told",
            )
        )
    return found


def check_style(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    rules = canon.rules
    found = []
    prose = draft.prose
    body = prose[len(prose) - len(prose.lstrip("\n")) :] if prose else ""
    offset = len(prose) - len(body)
    for word, source in rules.banned_words.items():
        hits = [m.start() + offset for m in re.finditer(re.escape(word), body)]
        for n, start in enumerate(hits, start=1):
            evidence = {"chapter": None, "file": source, "line": canon.source_line(source, word)}
            evidence["fact"] = f"文风规定禁用「{word}」"
            found.append(
                finding(
                    kind="banned_word",
                    severity=WARNING,
                    draft=draft,
                    start=start,
                    end=start + len(word),
                    term=word,
                    message=f"禁用词「{word}」（本章第 {n}/{len(hits)} 处）",
                    evidence=evidence,
                    suggestion=f"删去「{word}」或换成具体的动作、时间描写",
                )
            )
    if rules.quotes:
        wanted = QUOTE_PAIRS[rules.quotes]
        for key, (opening, closing) in QUOTE_PAIRS.items():
            if key == rules.quotes or opening in wanted:
                continue
            for line_no in sorted({draft.line_of(m.start()) for m in re.finditer(re.escape(opening), body)}):
                start = prose.index(opening, draft._line_starts[line_no - 1])
                count = draft.line_text(line_no).count(opening)
                if opening == closing:
                    count //= 2
                    if count == 0:
                        continue
                evidence = {
                    "chapter": None,
                    "file": rules.quotes_source,
                    "line": canon.source_line(rules.quotes_source, "quotes"),
                    "fact": f"文风规定对话引号为 {rules.quotes}",
                }
                found.append(
                    finding(
                        kind="quote_style",
                        severity=WARNING,
                        draft=draft,
                        start=start,
                        end=start + 1,
                        term=key,
                        message=f"本行用了 {key} 引号 {count} 处，文风规定为 {rules.quotes}",
                        evidence=evidence,
                        suggestion=f"把 {opening}{closing} 换成 {wanted[0]}{wanted[1]}",
                    )
                )
    return found


def _fm_line(draft: Draft, needle: str) -> int:
    for number in range(1, draft.body_line):
        if needle in draft.front_matter_lines[number - 1]:
            return number
    return 1


def check_front_matter(draft: Draft, canon: Canon, mentions: Mentions, *, chapter: int) -> list[dict]:
    found = []

    def add(kind: str, severity: str, tid: str, message: str, evidence: dict, suggestion: str) -> None:
        line = _fm_line(draft, tid)
        item = {
            "kind": kind,
            "kind_label": KINDS[kind],
            "severity": severity,
            "line": line,
            "quote": tid,
            "term": tid,
            "message": message,
            "evidence": evidence,
            "suggestion": suggestion,
            "waived": False,
        }
        found.append(item)

    for key, tids in (("advances", draft.advances), ("closes", draft.closes)):
        for tid in tids:
            thread = canon.threads.get(tid)
            if thread is None:
                if tid in draft.opens:
                    continue
                add(
                    "thread_unknown",
                    ERROR,
                    tid,
                    f"threads.{key} 中的「{tid}」没有对应的线索文件",
                    {"chapter": None, "file": "线索/", "line": None, "fact": f"线索/ 下没有 {tid}"},
                    "检查 id 拼写，或先在 线索/ 下建立该线索",
                )
                continue
            closed_at = canon.first_close.get(tid)
            closed_at = (
                min(c for c in (closed_at, thread.closed_chapter) if c is not None)
                if (closed_at or thread.closed_chapter)
                else None
            )
            if closed_at is not None and closed_at < chapter:
                evidence = canon.chapter_evidence(closed_at)
                evidence["fact"] = f"{tid}「{thread.title}」已于第{closed_at}章收尾"
                add(
                    "thread_closed",
                    ERROR,
                    tid,
                    f"threads.{key} 中的 {tid} 已于第{closed_at}章收尾",
                    evidence,
                    "另开新线索承接，或从 front matter 中删去",
                )
            elif thread.status == Thread_ABANDONED and closed_at is None and chapter > canon.last_activity(tid):
                add(
                    "thread_closed",
                    WARNING,
                    tid,
                    f"threads.{key} 中的 {tid} 已放弃",
                    {
                        "chapter": None,
                        "file": thread.source_path,
                        "line": canon.source_line(thread.source_path, "status"),
                        "fact": f"{tid} 状态为 已放弃",
                    },
                    "恢复线索状态为 进行，或从 front matter 中删去",
                )
            elif thread.opened_chapter is not None and thread.opened_chapter > chapter:
                add(
                    "thread_not_open",
                    WARNING,
                    tid,
                    f"threads.{key} 中的 {tid} 要到第{thread.opened_chapter}章才开启",
                    {
                        "chapter": None,
                        "file": thread.source_path,
                        "line": canon.source_line(thread.source_path, "opened"),
                        "fact": f"{tid} 开启于第{thread.opened_chapter}章",
                    },
                    "先开启该线索，或改正 opened",
                )
    for tid in canon.threads_planned_to_end(chapter):
        thread = canon.threads[tid]
        if tid in draft.closes:
            continue
        closed_at = canon.first_close.get(tid) or thread.closed_chapter
        if closed_at is not None and closed_at < chapter or thread.status == Thread_ABANDONED:
            continue
        found.append(
            {
                "kind": "thread_due",
                "kind_label": KINDS["thread_due"],
                "severity": INFO,
                "line": _fm_line(draft, "closes"),
                "quote": tid,
                "term": tid,
                "message": f"{tid}「{thread.title}」计划在第{chapter}章收尾，本章 closes 中没有它",
                "evidence": {
                    "chapter": None,
                    "file": thread.source_path,
                    "line": canon.source_line(thread.source_path, "planned_end"),
                    "fact": f"{tid} planned_end: {thread.planned_end_label}",
                },
                "suggestion": "本章收尾并写入 threads.closes，或推迟 planned_end",
                "waived": False,
            }
        )
    if WEAK_HOOK.search(draft.hook_type):
        threshold = canon.book.threshold("weak_hook_streak")
        streak = [chapter]
        number = chapter - 1
        while number in canon.chapters and WEAK_HOOK.search(canon.chapters[number]["hook_type"] or ""):
            streak.append(number)
            number -= 1
        if threshold and len(streak) >= threshold:
            first = min(streak)
            found.append(
                {
                    "kind": "weak_hook_streak",
                    "kind_label": KINDS["weak_hook_streak"],
                    "severity": WARNING,
                    "line": _fm_line(draft, "hook_type"),
                    "quote": draft.hook_type,
                    "term": "hook_type",
                    "message": f"本章是连续第 {len(streak)} 个弱钩（第{first}–{chapter}章），阈值 {threshold}",
                    "evidence": {
                        "chapter": chapter - 1,
                        "file": canon.chapters.get(chapter - 1, {}).get("source_path", ""),
                        "line": None,
                        "fact": f"第{first}–{chapter - 1}章的 hook_type 都是弱钩；book.yaml thresholds.weak_hook_streak = {threshold}",
                    },
                    "suggestion": "把本章结尾的钩子写强（-中 / -强）",
                    "waived": False,
                }
            )
    return found


Thread_ABANDONED = "已放弃"

BODY_CHECKS = (check_inactive, check_realms, check_items, check_alias_windows, check_typos, check_secrets, check_style)
