"""Signals read from the book's own characters, not from the segmenter's tokens: which character
strings behave like words (free on both sides, cohesive, spread over chapters), which characters sit
at the edge of many different names (speech verbs after them, prepositions before them: learned, not
listed), and which words name a group (众人都…). Pure: chapters in, counts out; no Django.

jieba cuts an unknown name differently each time, or not at all (袭 + 人), and glues a function word
onto a name it does not know (玄德曰, 向宝玉). These signals hold in any Chinese text; ``token_repair``
uses them to give the engine the name as one token and the edge word as another.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import ahocorasick

Token = tuple[str, str]
HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
_HAN = re.compile(r"^[\u4e00-\u9fff]+$")
BOUNDARY = "#"  # what stands next to an n-gram at a punctuation mark or a line's end
# Characters that begin a group (众人, 诸将, 群臣): the language's collective prefixes, a fixed list.
GROUP_PREFIX = frozenset("众诸群各每")
# Written after a plural subject (众人都…, 二人皆…, 师徒们): a word followed by these often is a group.
# Not 等: after a name it means "and the others with him" (宋江等, in 15 % of 宋江's uses in 水浒传 第71–120回),
# so the leader of any band would be a group.
PLURAL_AFTER = frozenset("都皆俱齐们各")
PLURAL_MIN = 3  # … at least this many times (a minor name followed once by 各 in 12 uses is no group)
NUMERALS = frozenset("一二三四五六七八九十两几数百千")
PLURAL_SHARE = 0.08  # names are followed by 都 / 皆 … in ≤ 2 % of their uses (西游记), groups in ≥ 10 %
EDGE_LIFT = 4.0  # an edge character follows (precedes) names this many times more often than text at large
EDGE_SHARE = 0.003  # … and stands next to at least this share of the names' occurrences
FREE_SIDES = 4  # distinct neighbours on each side for a string to be a word of the book
CANDIDATE_SPEECH_SHARE = 0.08  # share of a candidate's uses right before a speech verb (it speaks)
PHRASE_HEAD = frozenset("pdcmru")  # parts of speech (jieba's letters) that begin no name
PHRASE_TAIL = frozenset("vufpdc")  # … and end none
DICT_PART = 100
CLAUSE_HEAD = 0.2  # share of a candidate's uses at the head of a clause (after punctuation)
PRE_SPEECH = 0.15  # a character followed by a speech verb this often stands before speech anyway (笑道)
DICT_WORD = 1  # any word of the segmenter's dictionary is its own token already: not a new name
GLUE_RATIO = 25.0
SPEECH_OPEN = re.compile(r"([\u4e00-\u9fff])[：:][“「\"]")
SPEECH_SHARE = 0.02  # a speech verb opens ≥ 2 % of the book's quotes
# The language's pronouns and demonstratives (a closed class, like the surnames): no name begins with one.
PRONOUN_START = frozenset(
    "我你他她它这那此其吾汝尔俺咱您"
)  # a string this frequent in the segmenter's dictionary is its word, not a new name


@dataclass
class TextStats:
    """Counts of the book's characters and of its frequent 2- and 3-character strings."""

    total: int = 0
    unigram: Counter[str] = field(default_factory=Counter)
    gram: Counter[str] = field(default_factory=Counter)
    left: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    right: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    chapters: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))


@dataclass
class Edges:
    """Characters learned to stand at the edge of names: ``left`` before them, ``right`` after."""

    left: frozenset[str] = frozenset()
    right: frozenset[str] = frozenset()


def ngram_counts(chapters: Iterable[tuple[int, str]], floor: int) -> TextStats:
    """Characters, and the 2- and 3-character runs of Han characters occurring ≥ ``floor`` times (a
    3-gram is counted only where both its 2-grams are frequent: the rest cannot be)."""
    st = TextStats()
    chapters = list(chapters)
    pairs: Counter[str] = Counter()
    for _, body in chapters:
        for run in HAN_RUN.findall(body):
            st.unigram.update(run)
            pairs.update(run[i : i + 2] for i in range(len(run) - 1))
    st.total = sum(st.unigram.values())
    keep2 = {g for g, n in pairs.items() if n >= floor}
    triples: Counter[str] = Counter()
    for _, body in chapters:
        for run in HAN_RUN.findall(body):
            for i in range(len(run) - 2):
                if run[i : i + 2] in keep2 and run[i + 1 : i + 3] in keep2:
                    triples[run[i : i + 3]] += 1
    st.gram = Counter({g: pairs[g] for g in keep2})
    st.gram.update({g: n for g, n in triples.items() if n >= floor})
    return st


def contexts(st: TextStats, chapters: Iterable[tuple[int, str]]) -> None:
    """The character before and after each occurrence of the frequent strings (``BOUNDARY`` at a
    punctuation mark or a line's end), and the chapters they occur in: one automaton pass."""
    if not st.gram:
        return
    automaton = ahocorasick.Automaton()
    for g in st.gram:
        automaton.add_word(g, g)
    automaton.make_automaton()
    left, right, where = st.left, st.right, st.chapters
    for number, body in chapters:
        last = len(body) - 1
        for end, g in automaton.iter(body):
            start = end - len(g) + 1
            lc = body[start - 1] if start > 0 else BOUNDARY
            rc = body[end + 1] if end < last else BOUNDARY
            left[g][lc if "\u4e00" <= lc <= "\u9fff" else BOUNDARY] += 1
            right[g][rc if "\u4e00" <= rc <= "\u9fff" else BOUNDARY] += 1
            where[g].add(number)


def text_stats(chapters: Iterable[tuple[int, str]], floor: int) -> TextStats:
    chapters = list(chapters)
    st = ngram_counts(chapters, floor)
    contexts(st, chapters)
    return st


def distinct_sides(counter: Counter[str]) -> int:
    """How many different neighbours a string has on one side; each boundary counts as its own (a
    string standing next to punctuation is free there)."""
    return len(counter) - (BOUNDARY in counter) + counter.get(BOUNDARY, 0)


def branching_entropy(counter: Counter[str]) -> float:
    """Entropy (bits) of one side's neighbours, each boundary its own neighbour."""
    total = sum(counter.values())
    if not total:
        return 0.0
    h = -sum((n / total) * math.log2(n / total) for c, n in counter.items() if c != BOUNDARY)
    b = counter.get(BOUNDARY, 0)
    return h + (b / total) * math.log2(total) if b else h


def cohesion(st: TextStats, g: str) -> float:
    """The weakest split's pointwise mutual information (natural log): how much more often the
    string's parts occur together than chance would put them."""
    n = st.gram.get(g, 0)
    if not n or not st.total:
        return 0.0

    def p(s: str) -> float:
        return (st.unigram[s] if len(s) == 1 else st.gram.get(s, 0)) / st.total

    splits = [(g[:i], g[i:]) for i in range(1, len(g))]
    return min(math.log((n / st.total) / (p(a) * p(b))) if p(a) and p(b) else 0.0 for a, b in splits)


def speech_verbs(chapters: Iterable[tuple[int, str]]) -> Counter[str]:
    """The characters written right before an opening quote after a colon (道：“ / 曰：“ / 说：“): the
    book's own speech verbs, whatever its register (曰 in a classical novel, 道 in a vernacular one)."""
    before: Counter[str] = Counter()
    for _, body in chapters:
        before.update(m.group(1) for m in SPEECH_OPEN.finditer(body))
    total = sum(before.values())
    return Counter({c: n for c, n in before.items() if n >= max(5, SPEECH_SHARE * total)})


def learn_edges(st: TextStats, seeds: Iterable[str], glued_tokens: Mapping[str, int], speech: Iterable[str]) -> Edges:
    """Characters found at the edge of many different names, learned from the book:

    - right: its speech verbs (曰, 道), the characters most often written just before one (笑道, 忙道),
      and any character the segmenter glued after ≥ 3 different names (沙僧笑, 张飞引: ``glued_tokens``
      are its person tokens, the rest of which occurs on its own);
    - left: a character written before ≥ 3 different names that then speak (对八戒道, 向行者道: the
      addressee's marker), or glued before ≥ 3 different names (向宝玉, 问宝玉).
    A character must also follow (precede) the seed names more often than other frequent words."""
    seeds = [s for s in seeds if st.gram.get(s)]
    speech = set(speech)
    right: dict[str, set[str]] = defaultdict(set)
    left: dict[str, set[str]] = defaultdict(set)
    for w in glued_tokens:
        if len(w) >= 3:
            if st.gram.get(w[:-1], 0) >= 2 * glued_tokens[w] + 3 and loose(st, w[-1], w[:-1], "right"):
                right[w[-1]].add(w[:-1])
            if st.gram.get(w[1:], 0) >= 2 * glued_tokens[w] + 3 and loose(st, w[0], w[1:], "left"):
                left[w[0]].add(w[1:])
    for s in seeds:
        for c in st.right[s]:
            # 笑 + 道 after a name (沙僧笑道): a character between names and their speech verb
            if c in st.unigram and c not in speech and any(st.gram.get(s + c + v, 0) >= 2 for v in speech):
                if loose(st, c, s, "right"):
                    right[c].add(s)
        for c, n in st.left[s].items():
            # 对八戒道, 向行者道: the addressee's marker, before names that then speak
            if c != BOUNDARY and n >= 2 and any(st.gram.get(c + s + v, 0) for v in speech) and loose(st, c, s, "left"):
                left[c].add(s)
    lift_r, lift_l = _edge_lift(st, seeds, st.right), _edge_lift(st, seeds, st.left)
    return Edges(
        left=frozenset(c for c, names in left.items() if len(names) >= 3 and lift_l(c) >= 1.5),
        right=frozenset(speech | {c for c, names in right.items() if len(names) >= 3 and lift_r(c) >= 1.5}),
    )


def loose(st: TextStats, c: str, name: str, side: str) -> bool:
    """``c`` stands beside ``name`` about as often as it stands anywhere (a function word: 向 + 宝玉),
    not far more often (a surname or a suffix of one name: 沙 + 悟净, 灵霄 + 殿). The ratio of the
    two rates is below ``GLUE_RATIO``."""
    pair = c + name if side == "left" else name + c
    n, k = st.gram.get(name, 0), st.gram.get(pair, 0)
    if not n or not k or not st.unigram.get(c):
        return False
    return (k / n) / (st.unigram[c] / st.total) < GLUE_RATIO


def _edge_lift(st: TextStats, seeds: list[str], table: dict[str, Counter[str]]):
    """How much more often a character stands beside the seed names than beside other frequent words."""
    seed_set = set(seeds)
    near: Counter[str] = Counter()
    base: Counter[str] = Counter()
    for g in st.gram:
        (near if g in seed_set else base).update({c: n for c, n in table[g].items() if c != BOUNDARY})
    n_near, n_base = sum(near.values()) or 1, sum(base.values()) or 1

    def lift(c: str) -> float:
        return (near[c] / n_near) / ((base[c] + 1) / n_base)

    return lift


def edge_share(st: TextStats, edges: Edges, g: str) -> float:
    """The share of a string's occurrences with an edge character right after or right before it."""
    n = st.gram.get(g, 0)
    if not n:
        return 0.0
    after = sum(k for c, k in st.right[g].items() if c in edges.right)
    before = sum(k for c, k in st.left[g].items() if c in edges.left)
    return min(1.0, (after + before) / n)


def glued(st: TextStats, edges: Edges, g: str, names: Iterable[str] = ()) -> str:
    """The name inside ``g`` when ``g`` is a name with an edge character glued on (玄德曰 → 玄德,
    向宝玉 → 宝玉): the rest occurs on its own well beyond the glued form. '' otherwise."""
    names = set(names)
    n = st.gram.get(g, 0) or 1
    for rest, edge, side in ((g[:-1], g[-1], edges.right), (g[1:], g[0], edges.left)):
        if len(rest) >= 2 and edge in side and (rest in names or st.gram.get(rest, 0) >= n + 3):
            return rest
    return ""


def name_candidates(
    st: TextStats,
    edges: Edges,
    speech: Iterable[str],
    lexicon: Mapping[str, int],
    min_count: int,
    tags: Mapping[str, str] | None = None,
    seeds: Iterable[str] = (),
) -> dict[str, float]:
    """Strings of 2–3 characters that behave as speakers' names in this book, whatever the segmenter
    makes of them (袭 + 人): frequent, in ≥ 2 chapters, free on both sides, cohesive, written right
    before a speech verb in ≥ 8 % of their uses, no word of the segmenter's dictionary and no glued
    form; their last character is not one that stands before speech verbs anyway (笑 of 呆子笑道).
    Their speech share, by string. ``tags``: the dictionary's part of speech of single characters (a
    phrase begins with a preposition or an adverb, or ends on a verb or a particle: 对众, 迎着, 阻住);
    a string holding a seed name or a dictionary word of two characters is a phrase (对唐僧, 在门外)."""
    speech = set(speech)
    tags = tags or {}
    seeds = set(seeds)
    before_speech = {c: sum(st.gram.get(c + v, 0) for v in speech) / n for c, n in st.unigram.items() if n >= min_count}
    out: dict[str, float] = {}
    for g, n in st.gram.items():
        if n < min_count or len(st.chapters.get(g, ())) < 2 or lexicon.get(g, 0) >= DICT_WORD:
            continue
        if g[0] in GROUP_PREFIX or g[0] in PRONOUN_START or g[-1] in edges.right or g[0] in edges.left:
            continue  # a group (众人) or a glued form (宝玉道, 向宝玉): the name inside is its own string
        if before_speech.get(g[-1], 1.0) >= PRE_SPEECH or any(c in speech for c in g):
            continue
        if tags.get(g[0], "")[:1] in PHRASE_HEAD or tags.get(g[-1], "")[:1] in PHRASE_TAIL:
            continue
        if len(g) == 3 and any(p in seeds or lexicon.get(p, 0) >= DICT_PART for p in (g[:2], g[1:])):
            continue
        if distinct_sides(st.left[g]) < FREE_SIDES or distinct_sides(st.right[g]) < FREE_SIDES:
            continue
        # A name is also the object of verbs and the subject of more than its lines: Han characters on
        # both sides, several different ones (喝一声 is only ever followed by 道).
        han_left = sum(1 for c in st.left[g] if c != BOUNDARY)
        han_right = sum(1 for c in st.right[g] if c != BOUNDARY and c not in speech)
        if han_left < 3 or han_right < FREE_SIDES:
            continue
        if cohesion(st, g) < math.log(8):
            continue
        # A piece of a longer string (猴 + 王 of 美猴王 when 美 is nearly always before it): the
        # longer string is the unit.
        lc, ln = st.left[g].most_common(1)[0]
        rc, rn = st.right[g].most_common(1)[0]
        if (lc != BOUNDARY and ln >= 0.8 * n) or (rc != BOUNDARY and rn >= 0.8 * n):
            continue
        share = sum(st.right[g].get(v, 0) for v in speech) / n
        # A subject heads its clause (，袭人道); a phrase before 道 follows its subject (行者在旁道).
        if share >= CANDIDATE_SPEECH_SHARE and st.left[g].get(BOUNDARY, 0) >= CLAUSE_HEAD * n:
            out[g] = round(share, 3)
    return out


def group_words(st: TextStats, words: Iterable[str]) -> set[str]:
    """Words that name a group, not a person: begun by a collective prefix (众人, 诸将), a numeral +
    a character that follows three or more numerals in the book (二人, 三人, 两人), or followed by a
    plural adverb (都 / 皆 / 们 …) in ≥ 8 % of their uses and at least 3 times (师徒都…; not 等, which
    follows a leader's name: 宋江等)."""
    after_numeral: Counter[str] = Counter(
        g[1] for g, n in st.gram.items() if len(g) == 2 and g[0] in NUMERALS and n >= 2
    )
    out = set()
    for w in words:
        if w[0] in GROUP_PREFIX and len(w) >= 2:
            out.add(w)
        elif len(w) == 2 and w[0] in NUMERALS and after_numeral[w[1]] >= 3:
            out.add(w)
        elif st.gram.get(w, 0) >= 10:
            plural = sum(k for c, k in st.right[w].items() if c in PLURAL_AFTER)
            if plural >= max(PLURAL_MIN, PLURAL_SHARE * st.gram[w]):
                out.add(w)
    return out


HEAD_FULL = 0.5  # a character heads a clause in about half of its narrated uses (张清挺枪…, ，琼英道)
VARIETY_FULL = 15  # … and is followed by many different characters (the verbs it does)


def agency(st: TextStats, words: Iterable[str]) -> dict[str, float]:
    """How much each string acts as the subject of the narration, 0–1: the share of its uses that head a
    clause (after punctuation or a line's start), against ``HEAD_FULL``, times the number of different
    characters after it (right accessor variety), against ``VARIETY_FULL``. A character who seldom
    speaks (a warrior of a battle chapter) still heads clauses with many verbs; a common noun jieba
    tagged as a name (言语, 备细) does neither. Strings not counted (fewer uses than the floor) get 0."""
    out = {}
    for w in words:
        n = st.gram.get(w, 0)
        if not n:
            continue
        head = st.left[w].get(BOUNDARY, 0) / n
        variety = sum(1 for c in st.right[w] if c != BOUNDARY)
        out[w] = round(min(1.0, head / HEAD_FULL) * min(1.0, variety / VARIETY_FULL), 3)
    return out


GIVEN_AGENCY = 0.5  # a given name acts: heads clauses with many different verbs after it (agency)
GIVEN_LIFT = 50.0  # … and a dictionary word is this many times more frequent in the book than in the language
GIVEN_TAIL_NOT = frozenset("ufpdcry")  # … that ends on no particle, preposition, pronoun (立在, 有何)
# A surname of the book: at least this share of its character's uses begin a person-tagged token (沈: 0.76
# in a family saga; 马 of 回马 / 拨马: 0.15 in 水浒传, a horse far more often than a family).
SURNAME_SHARE = 0.3


def given_names(
    st: TextStats,
    *,
    surnames: Iterable[str],
    full_forms: Mapping[str, int],
    lexicon: Mapping[str, int],
    tags: Mapping[str, str],
    min_count: int,
) -> set[str]:
    """Two-character strings that are a person's given name in this book, though the segmenter has them
    as ordinary words (觉民/v, 淑贞/n, 建国/ns) or cuts them apart: written after a surname as a full name
    the segmenter tags a person at least once (沈觉民/nr: ``full_forms``, the book's person-tagged tokens
    and their counts; a surname of the book begins person tokens in ≥ 30 % of its uses: not 马 of 回马飞报),
    written after one surname only (唐御弟 and 王御弟: a title), acting (``agency`` ≥ 0.5: heading clauses, many different verbs after), free and cohesive as a word,
    in ≥ 2 chapters, and — for a word of the dictionary — far more frequent in the book than in the
    language (≥ 30×: 建国 in a family saga; not 忽然 after 老王)."""
    full_forms = dict(full_forms)
    starts: Counter[str] = Counter()
    for w, k in full_forms.items():
        starts[w[0]] += k
    surnames = set(surnames)
    full: dict[str, set[str]] = defaultdict(set)  # a given name → the surnames it is written after as a full name
    for w in full_forms:
        if len(w) == 3 and w[0] in surnames:
            full[w[1:]].add(w[0])
    after: dict[str, set[str]] = defaultdict(set)  # … or written after twice (沈 + 觉民, cut apart)
    for g, n in st.gram.items():
        if len(g) == 2 and n >= min_count:
            after[g] = {c for c, k in st.left[g].items() if c in surnames}
            full[g] |= {c for c in after[g] if st.left[g][c] >= 2}
    # After two surnames it is a title (唐御弟, 王御弟), not one person's given name.
    full = {g: cs for g, cs in full.items() if len(cs | after.get(g, set())) == 1}
    book = {c for c in surnames if starts[c] >= SURNAME_SHARE * st.unigram.get(c, 0) > 0}
    total = sum(lexicon.values()) if lexicon else 0
    out: set[str] = set()
    for g, n in st.gram.items():
        if len(g) != 2 or n < min_count or len(st.chapters.get(g, ())) < 2:
            continue
        if g[0] in GROUP_PREFIX or g[0] in PRONOUN_START or g[0] in NUMERALS:
            continue
        if tags.get(g[0], "")[:1] in PHRASE_HEAD or tags.get(g[1], "")[:1] in GIVEN_TAIL_NOT:
            continue  # a phrase (有何, 立在); a given name may end on a verb's character (德盛, 觉民)
        if not full.get(g, set()) & book:
            continue  # never a full name's given name of a surname of the book (拿了, 话说; 回马 + 飞报)
        f = lexicon.get(g, 0)
        if f and n / max(st.total, 1) < GIVEN_LIFT * f / total:
            continue  # a word of the language used as often as the language uses it
        if distinct_sides(st.left[g]) < FREE_SIDES or distinct_sides(st.right[g]) < FREE_SIDES:
            continue
        if cohesion(st, g) < math.log(8) or agency(st, [g]).get(g, 0.0) < GIVEN_AGENCY:
            continue
        out.add(g)
    return out


VERB_GLUE_RATIO = 3  # the name after a verb occurs on its own this many times as often as the glued token


def verb_glued(
    st: TextStats,
    words: Mapping[str, int],
    tags: Mapping[str, str],
    surnames: Iterable[str],
    min_count: int,
    names: Iterable[str],
) -> dict[str, str]:
    """Three-character person tokens that are a verb or a preposition + a two-character name of ``names``
    (the book's person words) written far more often on its own (闻宋江/nr of 上闻宋江 against 宋江; 见宝玉;
    not 花和尚, 和尚 being no name): the segmenter glued a single-character word it reads as a verb onto a
    name, even where no edge was learned for it. Glued
    token → name. A surname first keeps the token whole: one of the language's, or a character that
    begins three or more person words (``words``: token → count) written ≥ min-count times whose rest is
    no name on its own nor a verb (关 of 关羽, 关平, 关兴; not 闻 of 闻焕章, 闻奏 and the glued 闻天子)."""
    surnames, names = set(surnames), set(names)

    def glued_tail(w: str) -> bool:
        return (
            len(w) == 3
            and w[1:] in names
            and st.gram.get(w[1:], 0) >= max(min_count, VERB_GLUE_RATIO * st.gram.get(w, 0))
        )

    heads = Counter(
        w[0]
        for w, n in words.items()
        if 2 <= len(w) <= 3 and n >= min_count and not glued_tail(w) and (len(w) == 3 or tags.get(w[1], "")[:1] != "v")
    )
    out: dict[str, str] = {}
    for w in words:
        if w[0] in surnames or heads[w[0]] >= 3 or tags.get(w[0], "")[:1] not in "vp":
            continue
        if glued_tail(w):
            out[w] = w[1:]
    return out


CUT_NOT_TAIL = frozenset("dupcrye")  # adverbs, particles, prepositions, conjunctions, pronouns, modals
CUT_SHARE = 0.8  # a name written with the same next character this often is cut short by the segmenter


def cut_names(
    st: TextStats,
    seeds: Iterable[str],
    edges: Edges,
    speech: Iterable[str],
    lexicon: Mapping[str, int],
    tags: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Two-character person words the book nearly always writes with one more character after them (呼延
    + 灼 in 81 of 96 uses, 令狐 + 峻): the segmenter cut a name short (呼延/nr + 灼/vg). Seed → that
    character, when it is no speech verb nor learned edge (宋江道, 向宝玉 are glued forms, not names) and
    the three characters are no word of the dictionary (a seed inside a common word is another matter);
    ``tags``: the dictionary's part of speech of single characters — a function word (李逵也, 宋江便) after
    a name is the next word, not the name's end."""
    speech, tags = set(speech), tags or {}
    out: dict[str, str] = {}
    for w in seeds:
        n = st.gram.get(w, 0)
        if len(w) != 2 or not n or not st.right.get(w):
            continue
        c, k = st.right[w].most_common(1)[0]
        if c == BOUNDARY or k < CUT_SHARE * n or c in speech or c in edges.right or c in edges.left:
            continue
        if tags.get(c, "")[:1] in CUT_NOT_TAIL or tags.get(c) == "v":
            continue  # a function word or a full verb (宝玉 + 见) after a name is the next word
        if distinct_sides(st.right.get(w + c, Counter())) < FREE_SIDES:
            continue  # the three characters are a word of the book: free on the right (呼延灼挺 / 呼延灼道 …)
        if lexicon.get(w + c, 0) >= DICT_WORD or st.gram.get(w + c, 0) < k:
            continue
        out[w] = c
    return out


def token_repair(
    tokens: list[Token],
    names: Mapping[str, str],
    joins: Mapping[str, int],
    retag: frozenset[str] = frozenset(),
    cut: Mapping[str, str] | None = None,
) -> list[Token]:
    """The segmenter's tokens with the book's names made whole: a token that is a name with an edge
    character glued on (``names``: glued form → name; 玄德曰 → 玄德 + 曰) is cut in two, and 2–3 short
    tokens whose characters spell a candidate name (``joins``: 袭 + 人 → 袭人) become one person token; a
    token that is a given name found by the book's statistics (``retag``: 觉民/v) is tagged a person; a
    name the segmenter cut short (``cut``: 呼延 → 灼) takes its next character back from the next token."""
    out: list[Token] = []
    i, n = 0, len(tokens)
    cut = cut or {}
    while i < n:
        w, f = tokens[i]
        tail = cut.get(w)
        if tail and i + 1 < n and tokens[i + 1][0].startswith(tail):
            rest, rest_f = tokens[i + 1]
            out.append((w + tail, "nr"))
            if len(rest) > 1:
                out.append((rest[1:], rest_f))  # 灼挺/z → 挺: the tag is the whole token's, kept as is
            i += 2
            continue
        name = names.get(w)
        if name:
            if w.startswith(name):
                out += [(name, "nr"), (w[len(name) :], "v")]
            else:
                out += [(w[: len(w) - len(name)], "p"), (name, "nr")]
            i += 1
            continue
        k = _join_length(tokens, i, joins) if len(w) <= 2 and joins else 0
        if k:
            out.append(("".join(t[0] for t in tokens[i : i + k]), "nr"))
            i += k
            continue
        if w in retag and f != "nr":
            out.append((w, "nr"))
        else:
            out.append(tokens[i])  # the same tuple: a book's tokens are shared, not copied (memory, D1)
        i += 1
    return out


def _join_length(tokens: list[Token], i: int, joins: Mapping[str, int]) -> int:
    """How many tokens from ``i`` spell a name of ``joins`` exactly (2 or 3), else 0."""
    joined = tokens[i][0]
    for k in (2, 3):
        if i + k > len(tokens):
            return 0
        joined += tokens[i + k - 1][0]
        if len(joined) > 3:
            return 0
        if joined in joins:
            return k
    return 0


def book_repair(
    chapters: list[tuple[int, str]],
    tokens: list[list[Token]],
    *,
    lexicon: Mapping[str, int],
    tags: Mapping[str, str],
    min_count: int,
    person_tags: frozenset[str],
    surnames: Iterable[str] = (),
) -> tuple[list[list[Token]], dict]:
    """The segmenter's tokens of every chapter, repaired with what the book's own text shows: the
    speech verbs and edge characters it uses, the glued forms cut (玄德曰 → 玄德 + 曰), the speakers'
    names jieba never emits whole joined (袭 + 人). Also returns what was learned (for the evidence)."""
    surnames = frozenset(surnames)
    st = text_stats(chapters, min_count)
    person: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for chapter in tokens:
        for w, f in chapter:
            if 2 <= len(w) <= 4:
                count[w] += 1
                if f in person_tags:
                    person[w] += 1
    seeds = [w for w, n in person.items() if n >= min_count and n >= 0.5 * count[w] and len(w) <= 3]
    speech = speech_verbs(chapters)
    edges = learn_edges(st, seeds, person, speech)
    candidates = name_candidates(st, edges, speech, lexicon, min_count, tags, seeds)
    given = given_names(
        st, surnames=surnames, full_forms=person, lexicon=lexicon, tags=tags, min_count=min_count
    ) - set(seeds)
    names = set(seeds) | set(candidates) | given
    split = {w: rest for w in person if len(w) >= 3 and (rest := glued(st, edges, w, names))}
    split = verb_glued(st, person, tags, surnames, min_count, seeds) | split
    # A name jieba seldom emits whole is joined from its pieces; one it emits whole as a word is retagged.
    joins = {g: 1 for g in set(candidates) | given if count[g] < 0.5 * st.gram.get(g, 0)}
    retag = frozenset(g for g in given if g not in joins)
    cut = cut_names(st, seeds, edges, speech, lexicon, tags)
    repaired = [token_repair(chapter, split, joins, retag, cut) for chapter in tokens]
    learned = {
        "speech_verbs": sorted(speech),
        "edges_left": sorted(edges.left),
        "edges_right": sorted(edges.right),
        "split": len(split),
        "joined": sorted(joins),
        "cut": sorted(w + c for w, c in cut.items()),
        "given_names": sorted(given),
        "groups": sorted(group_words(st, [w for w, n in count.items() if n >= min_count])),
        "agency": agency(st, [w for w, n in count.items() if n >= min_count]),
    }
    return repaired, learned
