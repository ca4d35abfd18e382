"""Whether a name heads a clause as the subject of a predicate, in any register of Chinese: by the
clause's structure (the clause introduces a quotation: 关公曰：“… / 先主问曰：“… / 张飞大呼：“…) and by the
part of speech of what follows the name (提刀上马, 挺戟出阵, 纵马上前, 方知其计: a verb, after adverbs),
from the segmenter's dictionary, not from a list of one book's verbs.

A name followed by a noun modifies it (武大灵位, 张顺魂, 王伦山寨), by a copula, a naming verb or a verb of
dying it is described (王伦是个…, 武大已死), by a coordinator it is one of several (precision first: said
nothing). Ghosts and spirits (魂, 魄, 鬼, 显圣, 托梦, 附体) never count as the living acting."""

import bisect
import re
from functools import lru_cache

from continuity.checks import lexicon, pos
from continuity.draft import Draft

# the marks a speaking clause ends with (the quotation follows)
SPEECH_END = frozenset("：:“「『")
# verbs that describe rather than act: copula, naming, dying and being buried, being (at / not)
DESCRIBING = frozenset("是乃为系姓名叫唤称号死亡殁卒故逝葬在有无")
# a verb of knowing or perceiving right after the name, after at most one adverb (方知, 闻知, 始晓)
KNOWING_HEAD = re.compile(r"^[^，。！？；：:“”「」、\n]?[知晓闻悟觉]")
GHOST = re.compile(r"魂|魄|鬼|显圣|显灵|托梦|附体|阴灵|英灵|亡灵")
CLAUSE_WINDOW = 8


@lru_cache(maxsize=4096)
def _verb_share(char: str) -> float:
    """The share (by frequency) of the dictionary's two-character words beginning with ``char`` that are
    verbs: 纵 (纵身, 纵火 …) is a verb though jieba tags the lone character a noun."""
    total = verbs = 0
    for word, count, tag in lexicon.prefixed(char):
        if len(word) == 2 and count:
            total += count
            if tag.startswith("v"):
                verbs += count
    return verbs / total if total else 0.0


# the dictionary's tags of words that make no part of a name: adverb, preposition, conjunction,
# particle, modal, interjection, pronoun (将 in 宋将乱撺 is 把 or a noun's head; not a classifier: 林封, 周壶)
FUNCTION_TAGS = frozenset("dpcuyer")


@lru_cache(maxsize=4096)
def is_function_char(char: str) -> bool:
    """Whether the dictionary tags the lone character ``char`` a function word (将 d, 之 u, 其 r)."""
    return (lexicon.tag(char) or "x")[:1] in FUNCTION_TAGS


@lru_cache(maxsize=1024)
def is_common_noun(word: str) -> bool:
    """Whether ``word`` is a noun of the dictionary (禅杖, 戒刀, 板斧: a kind of thing many may own, not
    one named object such as 赛唐猊 or 寒星剑), by the dictionary's table (no tagger loaded)."""
    found = lexicon.entry(word)
    return found is not None and found[0] > 0 and found[1][:1] == "n" and found[1] != "nr"


def is_personal_name(text: str) -> bool:
    """Whether the tagger reads ``text`` (two to four characters) as one personal name (nr)."""
    tokens = _tokens(text)
    return len(tokens) == 1 and tokens[0][1] == "nr"


def edge_name(text: str, *, last: bool) -> str:
    """The last (or first) word of ``text`` when the tagger reads it as a personal name of two or more
    characters, else empty."""
    tokens = [t for t in _tokens(text) if t[0].strip()]
    if not tokens:
        return ""
    word, flag = tokens[-1] if last else tokens[0]
    return word if flag == "nr" and len(word) >= 2 else ""


@lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[tuple[str, str], ...]:
    # cached: a range check asks the same short stretches (用 / 拿着 …) thousands of times
    # jieba's POS cut from the lexicon's table: jieba's tagger (its tag table, its prefix dictionary,
    # ~1.5-3.7 s per process) is never loaded
    return tuple(pos.pos_cut(text))


# aspect particles: what follows a verb, never a noun or a numeral (点了根烟: 点 is tagged a numeral)
ASPECT = frozenset(("了", "着", "过"))


def _adverbial(tokens: tuple[tuple[str, str], ...], i: int) -> bool:
    """Whether tokens[i] only modifies the predicate that follows: an adverb, a lone adjective, or a
    count of one blow before a verb (一把揪住, 一脚踢开: 一 + a classifier, tagged a numeral)."""
    word, flag = tokens[i]
    if flag == "d" or (flag == "a" and len(word) == 1):
        return True
    return (
        flag == "m" and len(word) == 2 and word[0] == "一" and i + 1 < len(tokens) and tokens[i + 1][1].startswith("v")
    )


def _lone_verb(tokens: tuple[tuple[str, str], ...], i: int) -> bool:
    """Whether the lone character tokens[i], whatever its tag, is a verb by its place: an aspect particle
    follows it (点了, 挺着), or it is an adverb by its tag that begins mostly verbs and takes an object
    (挺矛跃马: 挺 d, as in 挺好, but 挺身 / 挺进 / 挺立)."""
    word, flag = tokens[i]
    if len(word) != 1 or word in DESCRIBING or flag[:1] in ("u", "c", "p", "r", "x") or i + 1 >= len(tokens):
        return False
    after, after_flag = tokens[i + 1]
    if after in ASPECT:
        return True
    return (
        flag == "d"
        and _verb_share(word) >= 0.5
        and after_flag[:1] in ("n", "a")
        and len(after) == 1
        and (i + 2 < len(tokens) and tokens[i + 2][1].startswith("v"))
    )


def _predicate(tokens: tuple[tuple[str, str], ...]) -> bool:
    """Whether the tokens after a name begin with a predicate (adverbs skipped)."""
    i = 0
    while i < len(tokens) and _adverbial(tokens, i) and not _lone_verb(tokens, i):
        i += 1
    if i == len(tokens):
        return False
    word, flag = tokens[i]
    if _lone_verb(tokens, i):
        return True
    if flag.startswith("v"):
        # a verb run on by 的 makes a relative clause (周岱留下的兵书: left by him, not done now)
        if i + 1 < len(tokens) and tokens[i + 1][0] == "的":
            return False
        return word[0] not in DESCRIBING
    if flag in ("i", "l"):
        # an idiom of manner + 而 + verb (拂袖而去, 一跃而起, 夺门而出) is a predicate headed by that verb
        k = word.find("而", 1)
        rest = word[k + 1 :] if 0 < k < len(word) - 1 else ""
        return bool(rest) and lexicon.tag(rest).startswith("v") and rest[0] not in DESCRIBING
    if len(word) <= 2 and flag[0] not in "ucpmqrx" and word[0] not in DESCRIBING:
        # a lone character, or a verb-object compound tagged a noun (纵马): by the words it begins
        return (len(word) == 1 or flag == "n") and _verb_share(word[0]) >= 0.5
    return False


def _nominal(token: tuple[str, str]) -> bool:
    """A word of two or more characters that is a noun (place, time, pronoun …), not a verb-object
    compound the tagger calls a noun (纵马: its first character begins mostly verbs)."""
    word, flag = token
    if len(word) < 2 or flag[0] not in "nsrtfu" or flag == "nr":
        return False
    return flag[0] != "n" or len(word) != 2 or _verb_share(word[0]) < 0.5


def has_verb(text: str) -> bool:
    """Whether ``text`` (between a character and an item: 抡起, 拿起) holds a verb by its part of speech,
    not a verb of seeing or thinking (看着 / 想着 an item is no use of it)."""
    # the verb that governs the item is the last one before it (歪着头看那截断剑: 看, no use)
    # (a character after 那 / 一 is a classifier, whatever its tag: 那截, 一把)
    tokens = _tokens(text)
    verbs = [
        word
        for k, (word, flag) in enumerate(tokens)
        if (flag.startswith("v") and not (k and tokens[k - 1][1][:1] in ("r", "m") and len(word) == 1))
        or _complemented(tokens, k)
    ]
    return bool(verbs) and verbs[-1][0] not in DESCRIBING and verbs[-1][0] not in "看望瞧瞅盯想念记忆梦见听"


# what completes a verb's action (按下, 拿起, 攥住, 扯开): a preposition never takes one
COMPLEMENTS = frozenset("下上起住开出着了过紧")


def _complemented(tokens: tuple[tuple[str, str], ...], k: int) -> bool:
    """Whether tokens[k] is a lone character tagged a preposition but completed as a verb is (按下
    录音笔: 按 is tagged p, as in 按时)."""
    word, flag = tokens[k]
    return (
        flag == "p"
        and len(word) == 1
        and k + 1 < len(tokens)
        and len(tokens[k + 1][0]) == 1
        and tokens[k + 1][0] in COMPLEMENTS
    )


# the marks of a disposal clause: the verb that uses the object comes after it (秦月把翡翠玉坠挂在脖子上)
DISPOSAL = frozenset("把将")


def disposes(between: str, after: str) -> bool:
    """Whether ``between`` (a character to an item) ends with 把 / 将 as a word of its own (right before
    the item, 将 can be no "will": a verb would follow) and ``after`` (the item to its clause's end) goes
    on with a verb that uses it (挂在, 放在, 递给), not one of seeing."""
    tokens = _tokens(between)
    if not tokens or tokens[-1][0] not in DISPOSAL:
        return False
    return starts_with_verb(after) and has_verb(after[:CLAUSE_WINDOW])


# the tags of what may stand between a name and the rank it is said to be, in a sentence without a
# copula (韩彰不过一校尉, 林默现在也就F级): adverbs, conjunctions, time words, numerals, classifiers
LINKING_TAGS = frozenset("dctmq")
COORDINATORS = frozenset("和与及同跟并")


def links_rank(stretch: str) -> bool:
    """Whether ``stretch`` (between a name and a rank word, at most six characters) holds nothing but
    adverbs, conjunctions, time words and counts, so that the rank is said of the name: a nominal
    predicate (X不过一校尉). A verb (斩一校尉) or a coordinator (与一校尉) makes the rank someone else's."""
    if not stretch or len(stretch) > 6 or any(c in COORDINATORS for c in stretch):
        return False
    return all(flag[:1] in LINKING_TAGS for _, flag in _tokens(stretch))


def starts_with_verb(text: str) -> bool:
    """Whether ``text`` begins with a verb, after adverbs (the predicate goes on after a noun: 哨棒 | 赶将去,
    which the tagger reads 赶将 d + 去 v)."""
    tokens = _tokens(text)
    i = 0
    while i < len(tokens) and tokens[i][1] == "d":
        i += 1
    return i < len(tokens) and tokens[i][1].startswith("v")


def modifies_noun(text: str) -> bool:
    """Whether ``text`` (what follows a name, up to a speech verb) begins with a noun the name modifies
    (旧居门上写道), not a noun of the voice that tells how the name speaks (低声说, 沉声道: X声 + the verb)."""
    tokens = _tokens(text[:CLAUSE_WINDOW])
    if len(tokens) == 1 and len(text) == 2 and text[1] == "声":
        return False
    return bool(tokens) and _nominal(tokens[0])


# verbs of perceiving: a name after them may still be the one who speaks (只听宋江道, 忽见周岱曰)
PERCEIVING = frozenset("见闻听看望瞧觑")


def object_of_verb(prefix: str) -> bool:
    """Whether the stretch before a name (from its clause's start) ends with a lone verb whose object the
    name is (后人有诗叹裴元曰: 叹 裴元; 骂宋江道), so the name is not the clause's subject."""
    if not prefix:
        return False
    tokens = _tokens(prefix[-6:])
    word, flag = tokens[-1]
    return len(word) == 1 and flag[:1] in ("v", "z") and word not in PERCEIVING and word not in DESCRIBING


def clause_subject_acts(draft: Draft, start: int, end: int, prefix: str) -> bool:
    """Whether the name at prose[start:end], ``prefix`` after its clause's start, is the clause's subject
    doing something (not a name mentioned, described or modifying a noun). The caller has ruled out
    quotations, memories and possessives."""
    prose = draft.prose
    marks = draft._clause_marks
    k = bisect.bisect_left(marks, end)
    stop = marks[k] if k < len(marks) else len(prose)
    rest = prose[end:stop]
    if GHOST.search(rest[:CLAUSE_WINDOW]) or GHOST.search(prose[max(0, start - 6) : start]):
        return False
    if not rest or rest[0] in "、和与及同并等":
        return False
    head = len(prefix) <= 2 or prefix.endswith("见")
    speaking = stop < len(prose) and prose[stop] in SPEECH_END and len(rest) <= 6 and len(prefix) <= 8
    if not (head or speaking):
        return False
    if head and KNOWING_HEAD.match(rest):
        return True
    tokens = _tokens(rest[:CLAUSE_WINDOW])
    if tokens and _nominal(tokens[0]):
        return False  # the name modifies a noun (武大灵位上写道), or is followed by 那厮 / 手下 …
    if speaking:
        return True
    return head and _predicate(tokens)
