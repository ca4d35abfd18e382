"""Text → entity proposals: the cast of a novel found from its text alone (no model calls, no network).

Pure: chapters in, proposals out; no Django. One part-of-speech pass of jieba (its dictionary and HMM
ship inside the package) is the segmenter; everything after it is counting over that one token stream,
so the whole run costs little more than the segmenter's own pass.

Signals, each general (nothing here names a character of any particular novel; docs/discovery.md
has the table with every threshold):

- **who is a person**: jieba's person tags (nr, nrfg, nrt), dialogue attribution — a word right
  before a speech verb (X道 / X笑道 / X说 / X曰) that is not the object of 对 / 向 / 与 … —, and being
  named: the name after a naming word (名唤 / 叫做 / 号 / 又名 …), glued back from jieba's pieces
  (罗刹 + 女) and counted in the text; a word that mostly follows a noun or a pronoun (行者闻言) is a
  verb of it, not a name; name + title jieba cut apart (观世音 + 菩萨) is a name; tag corrections: a
  place tag on the tail or an abbreviation of a name (龙马, 白马 of 白龙马), names cut in two (剑 + 老 +
  说), words ending in a place or sect character (青岚宗) are no persons;
- **places / factions**: the ns / nt tags, with a frequency floor;
- **grouping aliases** (each joined name keeps the reason, shown as evidence): nesting (悟空 ⊂ 孙悟空),
  appositions (齐天大圣孙悟空; 如来佛祖 when 佛祖 follows no one else), naming patterns and chains
  (名唤罗刹女，又唤铁扇公主), a speaker naming himself (贫僧…法名玄奘), place + person (南海菩萨), surnames
  (老孙; one surname + the closest company in the paragraphs, companions weighed by rarity; surname +
  an owned title; surname + a two-character name counted in the text: 猪悟能), abbreviations (牛王 ←
  牛魔王), anaphora by lift (那呆子 after 八戒 far more often than after anyone else), who answers a form
  of address (“悟能，…” answered by 八戒), a speaker who uses another group's self-name in his own lines
  (猴王: “…看不见老孙！”), pinyin variants, and
  what the raw text shows with the names found (jieba cuts a name differently each time): a speaker's
  name for himself (“弟子陈玄奘，…”), X乃Y between two names, appositions jieba's tags hide — and
  one constraint over all of them: two names that meet in one sentence are two people (unless a
  naming sentence joins them);
- **generic words**: titles that end several names or follow several names, roles and epithets that
  take demonstratives (那妖精), forms of address answered by many (“大王，…”), proposed as generic
  aliases (counted apart, never plain ones); a group said only inside dialogue that never speaks
  (师兄) is no character;
- **order**: √count × confidence × voice (speech share, raised for groups a naming pattern introduces;
  full for a silent group pointed at that travels with the leading party: 白马 with the four pilgrims).

Own code rather than a library: no package does name clustering for Chinese fiction; jieba does the
part a library should (segmentation and tags).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from entities.discovery.bounds import MAX_CHARS, chapters_bounded, segment_bounded
from entities.discovery.textstats import book_repair

TYPES = ("角色", "地点", "势力")
Token = tuple[str, str]
Segmenter = Callable[[str], list[Token]]

_HAN = re.compile(r"^[\u3400-\u9fff]+$")
PERSON_TAGS = frozenset({"nr", "nrfg", "nrt"})
PLACE_TAGS = frozenset({"ns"})
# A word with one of these tags before 道 is a verb, adverb, pronoun …: 上前道, 他道 name nobody.
NOT_SPEAKER_TAGS = frozenset("vdapcumqyeofrilsz")
NOUNISH = frozenset({"n", "nr", "nrfg", "nrt", "nz", "ng", "nt", "ns"})
ORG_TAGS = frozenset({"nt"})
# Speech verbs that close a dialogue attribution (X道：“…”). Words ending in 道 that are not speech.
SPEECH_END = ("道", "说", "曰")
NOT_SPEECH = frozenset({"知道", "难道", "大道", "味道", "一道", "地道", "街道", "正道", "小道", "道道", "称道", "报道"})
# A word right after one of these is the addressee or object, not the speaker.
OBJECT_MARKERS = frozenset({"对", "向", "与", "和", "跟", "同", "叫", "问", "望", "朝", "教", "请", "把", "将", "被"})
DEMONSTRATIVES = frozenset({"那", "这", "那个", "这个", "此"})
# Patterns that introduce another name of the person just mentioned.
NAMING = re.compile(
    r"(?:姓[\u4e00-\u9fff]名|法名|名唤|唤名|名叫|名为|唤做|唤作|叫做|叫作|称为|号为|道号|混名|绰号|表字|人称|人唤|号"
    r"|又名|又唤|又叫|又号|又称|一名|别名|别号|小名|乳名|外号|诨名|本名|原名|号称|自称|号曰|名曰)"
)
SELF_INTRO = re.compile(r"(?:我乃|我是|吾乃|吾是|俺是|俺乃|我便是|我就是|在下|我本是|我原是|俺本是|吾本是)")
# First-person words of dialogue: a naming pattern in a line the speaker says of himself (我…法名Y,
# 贫僧…法名Y) names the speaker.
FIRST_PERSON = frozenset({"我", "吾", "俺", "贫僧", "小僧", "老衲", "贫道", "在下", "本王", "朕", "孤", "老身", "小人"})
# What closes a vocative at the head of a quote (“悟净，…” / “八戒！…”).
VOCATIVE_END = frozenset("，！,!")
# A speaker's name for himself, read in his own line: a humble self-word at the head of a clause
# (“弟子陈玄奘，…”, “贫僧玄奘…”), or a first-person word and a naming word (我的法名叫做陈玄奘,
# 贫僧俗名陈玄奘, 我乃Y), the name ending its clause (not 我是唐僧的徒弟, 我乃托塔天王三太子…).
_HUMBLE_SELF = "弟子|贫僧|小僧|老衲|贫道|在下|小人|小神|小弟|小臣|末将|晚生|小生|奴家|妾身|老汉|学生|小可"
HUMBLE_SELF = frozenset(_HUMBLE_SELF.split("|"))  # 弟子慧空: a name after it, no verb of a noun
# The language's own first-person words (any old man says 老夫): never one group's self-name.
SELF_WORDS = (
    FIRST_PERSON
    | HUMBLE_SELF
    | frozenset(
        "老夫 老朽 老子 老娘 本座 本尊 本宫 本官 本帅 本姑娘 洒家 寡人 哀家 愚兄 为师 咱家 人家 我们 咱们".split()
    )
)
_SELF_NAMED = re.compile(
    rf"(?:我|吾|俺|{_HUMBLE_SELF})(?:的)?(?:俗家)?(?:法名|俗名|名唤|名叫|叫做|唤做|乃是|乃|便是|就是|本是)"
    rf"|(?:^|(?<=[，。！？；：,!?;:]))(?:{_HUMBLE_SELF})"
)
_CLAUSE_END = frozenset("，。！？；：,.!?;:、”")
_QUOTE = re.compile(r"“([^“”]*)”")
_ATTRIBUTION = re.compile(r"[道说曰][：:]?(?=“)")
# Identity copulas between two names (唐僧乃金蝉长老, X，即Y), and what after Y makes Y someone else's
# (唐僧乃如来之徒, 我师父乃唐王御弟 is cut off by the name match already).
COPULA = frozenset({"乃", "乃是", "即", "即是", "原是", "本是", "就是", "便是", "原来是"})
COPULA_NOT_SAME = frozenset("之的家门手部麾座御")
# A word this frequent in the segmenter's general dictionary is a common noun (声音, 手指), not a title.
COMMON_WORD = 2000
# Honorific titles written after a name (a fixed list of the language, like SURNAMES; not any novel's).
HONORIFICS = frozenset(
    "真人 道长 道人 长老 大师 法师 禅师 上人 居士 先生 公子 姑娘 小姐 夫人 娘子 老爷 大人 将军 元帅 太子 公主"
    " 王爷 仙子 仙姑 真君 天王 菩萨 尊者 师兄 师姐 师弟 师妹 师叔 师伯 师父 师傅 掌门 宗主 前辈 老祖 祖师".split()
)
# Last characters of place and institution names (洲, 宗, 阁 …): a word of three or more characters
# ending in one names a place or a sect, not a person (城 / 国 / 山 end given names too: not listed).
PLACE_SUFFIXES = frozenset("洲宗阁殿寺观庙洞府州县派帮宫楼镇村岛庄")
# Quote marks inside a naming sentence (叫做‘孙悟空’) do not end it.
INNER_QUOTES = frozenset("‘’「」『』\"'")
# The commonest Chinese surnames (a fixed linguistic list, not any novel's cast): a lone one of these
# that jieba leaves before an unknown given name is that name's first character.
SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾萧田董袁潘蒋蔡余杜叶程苏魏吕丁"
    "任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦方白邹孟熊秦邱江尹薛段雷侯史陶黎贺顾毛郝龚邵万钱严武戴莫孔汤"
)
# Two names meeting in one sentence (not back to back, not in a naming pattern) in this share of the
# rarer one's occurrences are two people: a strong link must not join them; a weak one yields sooner.
APART_STRONG, APART_WEAK = 0.1, 0.02
GENERIC_APART = 0.2  # a generic word meeting a name in this share of sentences is someone else
CLOSE_COMPANY = 0.6  # … or above which, when it is clearly the closest of its surname's groups
OLD_SURNAME_HELD = 2 / 3  # share of a surname's full-name occurrences one group holds for 老 + it to be that group
SAME_COMPANY = 0.85  # cosine of two names' paragraph company above which one surname means one person
_GLUE_HEAD_TAGS = frozenset({"n", "ng", "nr", "j"})
_STATE_AFTER = frozenset({"了", "过", "着", "去", "矣"})
# Characters that make a group, not a name, of the word they begin (众仙, 群妖, 诸将).
COLLECTIVE = frozenset("众诸群各每全满合两")
# The second character of a name jieba cut in two before a speech verb (剑 + 老/a + 道).
SPLIT_SPEAKER_TAGS = frozenset({"a", "ag", "n", "ng", "nr", "j", "b", "g"})
GIVEN_TAGS = frozenset({"nr", "ns", "nz", "ng", "n", "a", "ag"})
# One-character titles after a surname (老孙, 唐王 is a king): not a given name.
HONORIFIC_CHARS = frozenset("王公侯帝后君老爷")
SENTENCE_END = frozenset("。！？!?；;")


@dataclass
class ProposedAlias:
    alias: str
    count: int
    generic: bool
    why: str

    def as_dict(self) -> dict:
        return {"alias": self.alias, "count": self.count, "generic": self.generic, "why": self.why}


@dataclass
class Proposal:
    type: str
    name: str
    count: int
    first_chapter: int
    chapters: int
    confidence: float
    aliases: list[ProposedAlias] = field(default_factory=list)
    signals: dict[str, int] = field(default_factory=dict)
    samples: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        return [self.name, *(a.alias for a in self.aliases)]

    def as_dict(self) -> dict:
        return {
            "type": self.type,
            "name": self.name,
            "aliases": [a.as_dict() for a in self.aliases],
            "confidence": self.confidence,
            "evidence": {
                "count": self.count,
                "first_chapter": self.first_chapter,
                "chapters": self.chapters,
                "signals": dict(self.signals),
                "samples": list(self.samples),
            },
        }


def jieba_segment(text: str) -> list[Token]:
    """jieba's part-of-speech pass (dictionary and HMM from the installed package; loaded once)."""
    import jieba  # noqa: PLC0415 — heavy (≈1 s to build the prefix dict): loaded only when discovery runs
    import jieba.posseg as pseg  # noqa: PLC0415

    jieba.setLogLevel(60)
    return [(p.word, p.flag) for p in pseg.cut(text)]


def jieba_plain(text: str) -> list[Token]:
    """jieba's part-of-speech pass by its dictionary alone (no HMM: linear and fast on any text)."""
    import jieba.posseg as pseg  # noqa: PLC0415 — see jieba_segment

    return [(p.word, p.flag) for p in pseg.cut(text, HMM=False)]


def jieba_lexicon() -> Mapping[str, int]:
    """jieba's dictionary frequencies (loaded with the segmenter)."""
    import jieba  # noqa: PLC0415 — see jieba_segment

    jieba.initialize()
    return jieba.dt.FREQ


def jieba_tags() -> Mapping[str, str]:
    """jieba's dictionary part-of-speech tags (word → tag), loaded with the segmenter."""
    import jieba.posseg as pseg  # noqa: PLC0415 — see jieba_segment

    jieba_lexicon()
    return pseg.dt.word_tag_tab


class _Stats:
    """Counts gathered in one walk over the token stream."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()
        self.tag: dict[str, Counter[str]] = defaultdict(Counter)
        self.speaker: Counter[str] = Counter()
        self.after_name: Counter[str] = Counter()
        self.demonstrative: Counter[str] = Counter()
        self.first: dict[str, int] = {}
        self.chapters: dict[str, set[int]] = defaultdict(set)
        self.adjacent: Counter[tuple[str, str]] = Counter()
        self.naming: Counter[tuple[str, str]] = Counter()
        self.adjacent_first: dict[tuple[str, str], int] = {}
        self.adjacent_chapters: dict[tuple[str, str], set[int]] = defaultdict(set)
        self.answers: Counter[tuple[str, str]] = Counter()  # (vocative, who answered it next)
        self.quoted: Counter[str] = Counter()  # occurrences inside dialogue
        self.named: Counter[str] = Counter()
        self.clause_named: Counter[tuple[str, str]] = Counter()  # (owner, the clause after a naming word)
        self.chains: Counter[str] = (
            Counter()
        )  # names of naming chains (名唤罗刹女，又唤铁扇公主)  # how often a word is the Y of a naming pattern
        self.sentences: list[tuple[int, tuple[str, ...]]] = []  # (paragraph index, names) per sentence
        self.anaphora: list[tuple[str, tuple[str, ...]]] = []  # (epithet, names seen before it, nearest last)
        self.paragraphs = 0
        self.from_text: set[str] = set()  # names jieba seldom cuts whole, counted in the text itself


def _is_word(w: str) -> bool:
    return 2 <= len(w) <= 6 and _HAN.match(w) is not None


def _collect(chapters: Iterable[tuple[int, str]], segment: Segmenter) -> _Stats:
    st = _Stats()
    for number, body in chapters:
        tokens = _surnames_glue(segment(body))
        para: list[str] = []  # words of the current paragraph, in order
        nouns: list[str] = []  # its noun-tagged words (the X of "X，号Y")
        sentence: list[str] = []
        prev_w, prev_f, prev2_w, prev2_f, prev3_w = "", "", "", "", ""
        pending_naming = ""
        pending_intro = ""
        speaker_last = ""
        first_person = -1  # in a quote, how many nouns the sentence had at its first-person word
        in_quote = False
        named_buf: list[str] = []  # the pieces of the name after a naming word
        # The whole clause after a naming word, whatever jieba's tags (法名 + 了/ul + 尘: 了尘), while it
        # holds no pronoun, numeral, classifier, preposition, conjunction or adverb.
        clause_buf: list[Token] | None = None
        clause_owner = ""
        owner = last_named = ""
        chain = False  # the owner is a name named just before (a naming chain)
        since_speech = 99  # tokens since the last dialogue attribution
        quote_speaker = ""  # who says the open quote, when its attribution is right before it
        vocative: list[str] | None = None  # the quote's first words, while they may be a vocative
        called: tuple[str, str, int] | None = None  # (vocative, who called, paragraph) awaiting an answer
        for w, f in tokens:
            since_speech += 1
            if clause_buf is not None:
                if (
                    _HAN.match(w)
                    and "\n" not in w
                    and f[:1] not in "rmqpcdv"
                    and len(w) + sum(map(len, clause_buf)) <= 4
                ):
                    clause_buf.append((w, f))
                else:
                    # Only what the noun glue below cannot keep: a piece of another part of speech
                    # (了/ul), the name ending on a noun or a morpheme (尘/n; not 谢 + 了).
                    if (
                        (w in _CLAUSE_END or "\n" in w)
                        and clause_buf
                        and clause_buf[-1][1][:1] in "ng"
                        and any(cf[:1] not in "nbg" for _, cf in clause_buf)
                    ):
                        _clause_named(st, "".join(cw for cw, _ in clause_buf), clause_owner)
                    clause_buf = None
            if vocative is not None and w != "“":
                if _HAN.match(w) and len(vocative) < 3 and "\n" not in w:
                    vocative.append(w)
                else:
                    name = "".join(vocative)
                    if w in VOCATIVE_END and 2 <= len(name) <= 4 and name != quote_speaker:
                        called = (name, quote_speaker, st.paragraphs)
                    vocative = None
            if "\n" in w:
                if sentence:
                    st.sentences.append((st.paragraphs, tuple(sentence)))
                st.paragraphs += 1
                if named_buf:
                    _named_record(st, "".join(named_buf), owner, chain)
                para, sentence, nouns, named_buf = [], [], [], []
                prev_w = prev_f = prev2_w = prev2_f = prev3_w = ""
                pending_naming, pending_intro, last_named = "", "", ""
                in_quote = False
                continue
            if w in SENTENCE_END or w in ("“", "”"):
                if named_buf:
                    _named_record(st, "".join(named_buf), owner, chain)
                    named_buf = []
                last_named = ""
                if sentence:
                    st.sentences.append((st.paragraphs, tuple(sentence)))
                    sentence = []
                nouns = []  # the X of "X，号Y" is in Y's sentence
                pending_naming = ""
                first_person = -1
                if w == "”":
                    pending_intro = ""
            if w == "“" and speaker_last:
                pending_intro = speaker_last
            if w == "“":
                quote_speaker = speaker_last if since_speech <= 3 else ""
                vocative = []
            in_quote = (in_quote or w == "“") and w != "”"
            if len(w) >= 3 and w[0] in "那这" and _HAN.match(w):
                # jieba often glues the demonstrative on (那长老): split it back off.
                prev3_w, prev2_w, prev2_f, prev_w, prev_f, w = prev2_w, prev_w, prev_f, w[0], "r", w[1:]
            if _is_word(w):
                st.count[w] += 1
                st.tag[w][f] += 1
                st.chapters[w].add(number)
                if in_quote:
                    st.quoted[w] += 1
                if w not in st.first:
                    st.first[w] = number
                if prev_w in DEMONSTRATIVES:
                    st.demonstrative[w] += 1
                    st.anaphora.append((w, tuple(para[-12:])))
                if (prev_f in NOUNISH and prev_w not in HUMBLE_SELF) or (
                    prev_f == "r" and prev_w not in DEMONSTRATIVES
                ):
                    # After a noun or a pronoun (行者大惊, 怪大惊, 他大惊): likely a verb of it.
                    st.after_name[w] += 1
                    if prev_w != w and _is_word(prev_w):
                        st.adjacent[(prev_w, w)] += 1
                        st.adjacent_first.setdefault((prev_w, w), number)
                        st.adjacent_chapters[(prev_w, w)].add(number)
                if pending_intro and SELF_INTRO.search(prev2_w + prev_w):
                    st.naming[(pending_intro, w)] += 1
                para.append(w)
                if f in NOUNISH and not NAMING.fullmatch(w):
                    nouns.append(w)
                sentence.append(w)
            elif w.endswith(SPEECH_END) and len(w) <= 3 and w not in NOT_SPEECH:
                # X道 / X笑道; jieba may also cut 笑道 into 笑 + 道: one character between is allowed.
                who, who_f, before = (prev_w, prev_f, prev2_w) if _is_word(prev_w) else (prev2_w, prev2_f, prev3_w)
                if (
                    _is_word(who)
                    and (who != prev2_w or len(prev_w) == 1)
                    and who_f[:1] not in NOT_SPEAKER_TAGS
                    and before not in OBJECT_MARKERS
                ):
                    st.speaker[who] += 1
                    speaker_last = who
                    since_speech = 0
                    if called and st.paragraphs - called[2] <= 2 and who != called[1]:
                        # “悟净，…” answered by 沙僧道: the one called answers.
                        st.answers[(called[0], who)] += 1
                    called = None
                elif prev_f[:1] == "v" and len(prev_w) == 2 and prev2_f in NOUNISH and _is_word(prev2_w):
                    # X + gesture + 道 (唐僧合掌道): X says the quote that follows, though a verb sits
                    # between; not counted as a speaker (the gesture may be anyone's).
                    speaker_last = prev2_w
                    since_speech = 0
            if pending_intro and w in FIRST_PERSON and first_person < 0:
                first_person = len(nouns)
            # jieba may cut 又唤 / 一名 in two: the verb after 又 / 一 / 人 names too.
            naming = NAMING.fullmatch(w) is not None or (
                w in ("唤", "叫", "称", "号", "名") and prev_w in ("又", "一", "人", "遂", "自")
            )
            if pending_naming and not naming:
                # The name after a naming word, glued back from the pieces jieba cut it into (罗刹 + 女,
                # 圣婴 + 大王): nouns, distinguishing words and morphemes, up to 6 characters.
                if _HAN.match(w) and f[:1] in "nbg" and len(w) + sum(map(len, named_buf)) <= 6:
                    named_buf.append(w)
                elif not named_buf and (w in ("是", "为", "做", "个", "曰") or w in INNER_QUOTES):
                    pass
                else:
                    if named_buf:
                        last_named = "".join(named_buf)
                        _named_record(st, last_named, owner, chain)
                    named_buf, pending_naming = [], ""
            if naming:
                if named_buf:
                    last_named = "".join(named_buf)
                    _named_record(st, last_named, owner, chain)
                # Who is named: the name named just before in this sentence (名唤罗刹女，又唤铁扇公主),
                # else the last noun before the naming word (那少年名叫…).
                # A speaker naming himself (贫僧俗家姓陈，法名玄奘: at most one noun since 贫僧) names the
                # speaker; with more between (我师父…有个红孩儿，号…) it names someone else.
                if 0 <= first_person and len(nouns) - first_person <= 1 and not last_named:
                    owner = pending_intro
                else:
                    owner = last_named or (nouns[-1] if nouns else "")
                chain = bool(last_named)
                pending_naming, named_buf = w, []
                clause_buf, clause_owner = [], owner
            prev3_w, prev2_w, prev2_f, prev_w, prev_f = prev2_w, prev_w, prev_f, w, f
        if sentence:
            st.sentences.append((st.paragraphs, tuple(sentence)))
        st.paragraphs += 1
    return st


def _named_record(st: _Stats, name: str, owner: str, chain: bool) -> None:
    """``name`` followed a naming word: it is a name, and one of ``owner`` (the name or noun before
    it, or the speaker naming himself); ``chain`` when the owner was itself just named."""
    if len(name) < 2:
        return
    st.named[name] += 1
    if owner and owner != name:
        st.naming[(owner, name)] += 1
        if chain:
            st.chains.update((owner, name))


def _clause_named(st: _Stats, name: str, owner: str) -> None:
    """A whole clause of 2–4 characters after a naming word (法名了尘，) that jieba cut into pieces no
    noun glue keeps (了 + 尘: a particle and a noun): a name if the text later shows it speaking."""
    if 2 <= len(name) <= 4 and name != owner:
        st.clause_named[(owner, name)] += 1


def _surnames_glue(tokens: list[Token]) -> list[Token]:
    """A one-character surname jieba cut off an unknown given name (林 + 青云; 苏 + 晚晴, the surname
    tagged as an abbreviation) is glued back on; so is a speaker's name jieba cut into two single
    characters right before a speech verb (剑 + 老 + 道: a word and an honorific suffix)."""
    out: list[Token] = []
    i, n = 0, len(tokens)
    while i < n:
        w, f = tokens[i]
        # Most tokens are words or punctuation: only a one-character noun-like token can start a glue.
        if len(w) != 1 or f not in _GLUE_HEAD_TAGS or i + 1 >= n:
            out.append((w, f))
            i += 1
            continue
        nxt, nf = tokens[i + 1]
        if w in SURNAMES:
            if 1 <= len(nxt) <= 2 and nf in GIVEN_TAGS and _HAN.match(nxt):
                out.append((w + nxt, "nr"))
                i += 2
                continue
        if len(nxt) == 1 and i + 2 < n and w not in COLLECTIVE and _HAN.match(w) and _HAN.match(nxt):
            after, after_f = tokens[i + 2]
            if nf in SPLIT_SPEAKER_TAGS and after.endswith(SPEECH_END) and len(after) <= 2 and after not in NOT_SPEECH:
                out.append((w + nxt, "nr"))  # 剑 + 老 + 说: a speaker's name cut in two
                i += 2
                continue
            if nxt == "老" and nf == "a" and f != "j" and after_f[:1] not in "nu" and after not in _STATE_AFTER:
                # 剑 + 老 (剑老说, 剑老沉默): a word and the honorific suffix 老, not 老 "old" of a noun
                # after it (剑老人) nor of a state (人老了).
                out.append((w + "老", "nr"))
                i += 2
                continue
        out.append((w, f))
        i += 1
    return out


class _Groups:
    """Union-find over names, keeping why each name joined. Two groups never join when a member of
    one meets a member of the other in one sentence often (not written back to back): two names in
    one sentence are two people (八戒对行者道), whatever else links them."""

    def __init__(self, apart: dict[str, dict[str, float]] | None = None) -> None:
        self.parent: dict[str, str] = {}
        self.why: dict[str, str] = {}
        self.members: dict[str, set[str]] = {}
        self.apart = apart or {}  # name → {other name: share of the rarer one's occurrences they meet}
        self.generic: set[str] = set()
        # Full name → its given name (林承志 → 承志), once the surnames are read: two groups holding two
        # full names with no given name in common are two people (one family) for every later link.
        self.given: dict[str, str] = {}
        # Surname + one character (贾政, 贾琏, 唐僧, 唐王), person-tagged: two such groups with no
        # character in common are two people of one family (compared apart from the longer given names).
        self.given1: dict[str, str] = {}

    def _apart(self, ma: set[str], mb: set[str], floor: float) -> bool:
        for x in ma:
            for y, share in self.apart.get(x, {}).items():
                # A generic word (大圣: several people) meets each of them now and then; only meeting
                # often says two people.
                if (
                    y in mb
                    and share >= floor
                    and (share >= GENERIC_APART or (x not in self.generic and y not in self.generic))
                ):
                    return True
        return False

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def two_given(self, ma: set[str], mb: set[str]) -> bool:
        """Both groups hold a full name and their given names differ (林镇岳 / 林承志)."""
        for given in (self.given, self.given1):
            ga = {given[m] for m in ma if m in given}
            gb = {given[m] for m in mb if m in given}
            if ga and gb and not ga & gb:
                return True
        return False

    def join(self, child: str, owner: str, why: str, *, weak: bool = False, variant: bool = False) -> bool:
        """Join ``child``'s group to ``owner``'s. A weak link (one naming sentence, company, anaphora)
        yields to rarer meetings than a strong one (nesting, apposition). Two full names of different
        given names join only as one name written two ways (``variant``: same pinyin, 金刚 / 金钢)."""
        a, b = self.find(child), self.find(owner)
        if a == b:
            return False
        ma, mb = self.members.get(a, {a}), self.members.get(b, {b})
        if self._apart(ma, mb, APART_WEAK if weak else APART_STRONG) or (not variant and self.two_given(ma, mb)):
            return False
        self.parent[a] = b
        self.members[b] = ma | mb
        self.members.pop(a, None)
        self.why.setdefault(child, why)
        return True


def discover(
    chapters: Iterable[tuple[int, str]],
    *,
    min_count: int = 5,
    types: Iterable[str] = TYPES,
    segment: Segmenter | None = None,
    lexicon: Mapping[str, int] | None = None,
    tags: Mapping[str, str] | None = None,
    limit: int = 200,
    max_chars: int = MAX_CHARS,
    bounds: dict | None = None,
) -> list[Proposal]:
    """Proposals for the chapters' text, best first within each type (characters first).

    ``lexicon`` is the segmenter's general dictionary (word → frequency): jieba's when ``segment`` is
    not given, else none unless passed. A common word of the language (声音, 手指) is no title.
    At most ``max_chars`` characters are read; ``bounds`` (a dict) receives what was left out and how
    many pieces were no language (``entities.discovery.bounds``)."""
    chapters = list(chapters)
    if lexicon is None:
        lexicon = jieba_lexicon() if segment is None else {}
    if tags is None:
        tags = jieba_tags() if segment is None else {}
    chapters, note = chapters_bounded(chapters, max_chars)
    plain = jieba_plain if segment is None else None
    tokens = [
        segment_bounded(body, segment or jieba_segment, lexicon=lexicon, plain=plain, note=note) for _, body in chapters
    ]
    if bounds is not None:
        bounds.update(note)
    # The book's own text repairs the tokens first (textstats: edges learned, glued forms cut, names
    # jieba never emits whole joined); everything below counts over the repaired stream.
    tokens, _learned = book_repair(
        chapters, tokens, lexicon=lexicon, tags=tags, min_count=min_count, person_tags=PERSON_TAGS
    )
    stream = iter(tokens)
    st = _collect(chapters, lambda _body: next(stream))
    wanted = [t for t in TYPES if t in set(types)]
    out: list[Proposal] = []
    if "角色" in wanted:
        out += _persons(
            st,
            chapters=chapters,
            min_count=min_count,
            limit=limit,
            lexicon=lexicon,
            group_words=frozenset(_learned["groups"]),
        )
    taken = {n for p in out for n in p.names()}
    for type_name, tags in (("地点", PLACE_TAGS), ("势力", ORG_TAGS)):
        if type_name in wanted:
            out += _tagged(st, type_name=type_name, tags=tags, min_count=min_count, taken=taken, limit=limit)
    _samples(out, chapters)
    return out


def _share(counter: Counter[str], tags: frozenset[str]) -> float:
    total = sum(counter.values())
    return sum(n for f, n in counter.items() if f in tags) / total if total else 0.0


def _persons(
    st: _Stats,
    *,
    chapters: list[tuple[int, str]],
    min_count: int,
    limit: int,
    lexicon: Mapping[str, int],
    group_words: frozenset[str] = frozenset(),
) -> list[Proposal]:
    count = st.count
    chained = _named_count(st, chapters, min_count)
    # A person: tagged as a name most of the time, or the speaker of enough lines. A word that mostly
    # follows another name is a verb of that name (闻言, 大怒), not a name.
    person: set[str] = set()
    # A name written before an honorific title (云鹤 + 真人, 宗主云鹤真人) is a name, though it follows a
    # noun (the title before it) as a verb would.
    titled = {a for (a, b), n in st.adjacent.items() if b in HONORIFICS and n >= 2}
    for w, n in count.items():
        if n < min_count or w in group_words:
            continue  # a group (众人, 二人, 师徒们: textstats.group_words) is nobody
        nr = _share(st.tag[w], PERSON_TAGS)
        spk = st.speaker[w]
        if len(w) >= 3 and w[-1] in PLACE_SUFFIXES and spk < 0.05 * n and st.speaker[w[1:]] < 3:
            # 白鹭洲, 青岚宗, 藏经阁: a place or a sect jieba tagged as a name, never speaking (唐太宗 is
            # a person: 太宗 speaks)
            continue
        if st.after_name[w] > 0.4 * n and not (w in titled and nr >= 0.5):
            continue
        dem = st.demonstrative[w]
        if (
            nr >= 0.5
            or (spk >= max(3, min_count // 2) and spk >= 0.05 * n)
            or (dem >= min_count and dem >= 0.3 * n and spk)
            or ((st.named[w] >= 2 or w in chained) and _share(st.tag[w], PLACE_TAGS | ORG_TAGS) < 0.5)
        ):
            person.add(w)
    # A word jieba tags as a place that ends a person's name and is pointed at or speaks (龙马 of 白龙马:
    # 那龙马, 牵龙马) is that person's short form: the tag is wrong, places do not end names.
    # So is one that shortens such a name the way Chinese shortens names (白马 of 白龙马: its first
    # character and some of the others, in order) — the abbreviation rule below then joins them.
    for w, n in count.items():
        if n >= min_count and w not in person and _share(st.tag[w], PLACE_TAGS) >= 0.5:
            if (st.demonstrative[w] >= 2 or st.speaker[w] >= 2) and any(
                len(p) > len(w)
                and (p.endswith(w) or (p[0] == w[0] and w not in p and _subsequence(w, p)))
                and _share(st.tag[p], PERSON_TAGS) >= 0.5
                for p in person
            ):
                person.add(w)
                st.tag[w] = Counter({"nr": n})  # the place tag was wrong: a person word from here on
    # A longer word holding a person's name that itself speaks or is pointed at (猪八戒 ⊃ 八戒) is a
    # person too, whatever its tag.
    for w, n in count.items():
        if n >= min_count and w not in person and (st.speaker[w] or st.demonstrative[w]):
            if st.after_name[w] <= 0.5 * n and any(
                w[i:j] in person for i in range(len(w)) for j in range(i + 2, len(w) + 1) if j - i < len(w)
            ):
                person.add(w)
    # A name + the title of someone heard speaking often (观音 + 菩萨) is a person, and so is that name on
    # its own (观音), though neither ever speaks under it.
    titles = {w for w in person if st.speaker[w] >= 3 * min_count}
    # Of those, the ones written after three or more different words that are not speakers
    # themselves (观世音 / 南海 / 文殊 + 菩萨) are titles; after other speakers (八戒沙僧) a list.
    heads: dict[str, set[str]] = defaultdict(set)
    for (a, b), n in st.adjacent.items():
        if b in titles and n >= 2 and a not in titles:
            heads[b].add(a)
    title_words = {b for b, hs in heads.items() if len(hs) >= 3}
    for w, n in list(count.items()):
        if n < min_count or w in person or len(w) < 4 or not _HAN.match(w):
            continue
        for k in (2, 3):
            head, title = w[:-k], w[-k:]
            if title in titles and len(head) >= 2 and st.after_name[w] <= 0.5 * n:
                person.add(w)
                if count[head] >= min_count and st.after_name[head] <= 0.5 * count[head]:
                    person.add(head)
                break
    for (head, title), n in st.adjacent.items():
        # The same when jieba cut the two apart (观世音 + 菩萨): the head alone is a name.
        if (
            title in title_words
            and n >= min_count
            and head not in person
            and count[head] >= min_count
            and n >= 0.3 * count[head]  # mostly written with its title (not 东土 of 东土和尚)
            and _share(st.tag[head], NOUNISH) >= 0.5
            and _share(st.tag[head], PLACE_TAGS) < 0.5  # 南海 + 菩萨: where she lives, not a name
            and st.after_name[head] <= 0.5 * count[head]
        ):
            person.add(head)
    # A named name made of a word and a title (圣婴 + 大王) has that word alone for a short form.
    for w in [w for w in person if st.named[w]]:
        for k in (1, 2):
            head, title = w[:-k], w[-k:]
            if len(head) >= 2 and (title in person or k == 1) and count[head] >= min_count:
                if head not in person and st.after_name[head] <= 0.5 * count[head]:
                    person.add(head)
                break
    # A verb glued onto a name (保 + 唐僧: 保唐僧取经) is segmentation noise, not a longer name: one
    # extra leading character that is no surname, far rarer than the name, never speaking.
    for w in list(person):
        b = w[1:]
        if (
            b in person
            and w[0] not in SURNAMES
            and count[w] * 3 < count[b]
            and not st.speaker[w]
            and not st.demonstrative[w]
        ):
            person.discard(w)
    for w in list(person):
        b = w[:-1]
        if len(b) >= 2 and b in person and count[w] * 3 < count[b] and not st.named[w]:
            person.discard(w)  # a verb glued after a name (沙僧笑道 cut as 沙僧笑 + 道)
    # 老 + X names a surname only when X also begins two full names (孙悟空, 孙行者 → 老孙); 老妖, 老魔
    # are epithets.
    starts = Counter(w[0] for w in person if len(w) >= 3)
    surnames = SURNAMES | {
        w[1] for w, n in count.items() if len(w) == 2 and w[0] == "老" and n >= min_count and starts[w[1]] >= 2
    }
    _given_names_recover(st, person, surnames, chapters, min_count)
    together = _sentence_pairs(st, person)
    # The text read whole, with the person words found (jieba cuts a name differently each time, 悟 +
    # 净…): a speaker's name for himself (“弟子陈玄奘，…”), X乃Y / X即Y, who answers a call (“悟净，…”).
    links = _text_links(chapters, person)
    # A naming sentence names one person twice (铁扇公主，又名罗刹女): its two names do not meet as two
    # people, nor do the tokens jieba cut them into (罗刹 of 罗刹女).
    named_together: Counter[frozenset[str]] = Counter()
    for (x, y), n in st.naming.items():
        for x_part in _parts(x, person):
            for y_part in _parts(y, person):
                named_together[frozenset((x_part, y_part))] += n
    for (x, y), n in links.copula.items():
        named_together[frozenset((x, y))] += n  # 周大年原是柳三变: one person named twice, not a meeting
    apart: dict[str, dict[str, float]] = defaultdict(dict)
    for pair, n in together.items():
        a, b = tuple(pair)
        if a in b or b in a:
            continue  # 孙悟空 … 悟空 in one sentence is one person named twice
        n -= st.adjacent[(a, b)] + st.adjacent[(b, a)] + named_together[pair]
        if n >= 3:
            apart[a][b] = apart[b][a] = n / min(count[a], count[b])
    groups = _Groups(apart)
    generic = groups.generic
    # A word that often takes a demonstrative (那妖精, 这国王, 那呆子) is a role or an epithet, which
    # names whoever fills it at the moment: generic. Proper names seldom do (那八戒: 4 %).
    generic.update(w for w in person if st.demonstrative[w] >= max(min_count, 0.2 * count[w]))
    # A word called out at the head of a line (“大王，…”) and answered by many different people is a
    # form of address, not one person's name.
    answered: dict[str, Counter[str]] = defaultdict(Counter)
    for (called, who), n in st.answers.items():
        if called in person and who in person:
            answered[called][who] += n
    for called, who in answered.items():
        total = sum(who.values())
        if total >= max(10, 2 * min_count) and who.most_common(1)[0][1] < 0.5 * total:
            generic.add(called)

    # Nesting: the longer names holding each name, weighted by how often they occur.
    holders: dict[str, list[str]] = defaultdict(list)
    by_len = sorted(person, key=len)
    for a in by_len:
        for i in range(len(a)):
            for j in range(i + 2, len(a) + 1):
                b = a[i:j]
                if b != a and b in person:
                    holders[b].append(a)
    for b, owners in holders.items():
        owners = sorted(set(owners), key=lambda a: (-count[a], a))
        weight = sum(count[a] for a in owners)
        best = owners[0]
        share = count[best] / weight
        # A title is the head at the end of the names it completes (孙大圣, 齐天大圣, 平天大圣); a name
        # at the start of a longer word (唐僧师徒, 哪吒太子) is that word's owner, not a title.
        ends = [a for a in owners if a.endswith(b)]
        end_share = max((count[a] for a in ends), default=0) / (sum(count[a] for a in ends) or 1)
        # Never the form a character is mostly written as (宝玉 alone far more than 贾宝玉, 甄宝玉 …).
        if (len(ends) >= 3 or (len(ends) >= 2 and end_share < 0.6)) and count[b] <= sum(count[a] for a in ends):
            generic.add(b)
        # A title used far more often alone than in the names holding it (大王 ⊂ 圣婴大王) names many.
        if share >= 0.5:
            groups.join(b, best, f"「{b}」是「{best}」的一部分")

    # Appositions and naming patterns.
    # A word written after several different names (灵吉菩萨, 文殊菩萨) is their title, not their name.
    title_of: dict[str, set[str]] = defaultdict(set)
    for a, b in st.adjacent:
        if a in person and b in person:
            title_of[b].add(a)
    generic.update(
        b
        for b, names in title_of.items()
        if len(names) >= 3 and sum(st.adjacent[(a, b)] for a in names) >= 0.3 * count[b]
    )
    for (a, b), n in st.adjacent.items():
        if (
            a in person
            and b in person
            and a not in generic
            and b not in generic
            and n >= 3
            and (n >= 0.1 * count[b] or title_of[b] == {a})
        ):
            # A word written after one name only (如来佛祖) is that name's title however seldom.
            groups.join(b, a, f"「{a}{b}」连写 {n} 次（同位语）")
    # A name given by several people's lines (行者 and 红孩儿 both say 圣婴) belongs to the one who
    # names it most, and to nobody on a tie.
    naming_owners: dict[str, Counter[str]] = defaultdict(Counter)
    for (a, b), n in st.naming.items():
        if a != b and a in person:
            naming_owners[b][a] += n
    for (a, b), n in st.naming.items():
        if a in st.named:
            n += st.naming[(b, a)]  # 名唤罗刹女，又唤铁扇公主 / 铁扇公主，又名罗刹女: one chain both ways
        owners = naming_owners[b].most_common(2)
        if len(owners) > 1 and owners[1][1] >= owners[0][1]:
            continue
        if a in person and b in person and a != b and n >= 2 and a not in generic and owners[0][0] == a:
            groups.join(b, a, f"称谓句式（法名/叫做/号/我乃…）{n} 次：{a} → {b}", weak=True)

    # A speaker's name for himself and X乃Y (read in the text above) join two groups, generic words aside.
    for kind, pairs in (("自称", links.self_named), ("同位", links.copula)):
        by_group: Counter[tuple[str, str]] = Counter()
        for (a, b), n in pairs.items():
            if a in generic or b in generic or lexicon.get(b, 0) >= COMMON_WORD:
                continue  # “弟子明白”: a common word after 弟子 is what he says, not his name
            ra, rb = groups.find(a), groups.find(b)
            if ra != rb:
                by_group[(ra, rb)] += n
        for (ra, rb), n in sorted(by_group.items(), key=lambda kv: (-kv[1], kv[0])):
            if n < 2 or groups.find(ra) == groups.find(rb):
                continue
            example = next(
                f"{a} → {b}"
                for (a, b) in pairs
                if groups.find(a) == groups.find(ra) and groups.find(b) == groups.find(rb)
            )
            why = (
                f"对白中自称（弟子/贫僧/法名…）{n} 次：{example}"
                if kind == "自称"
                else f"「X乃/即/原是Y」{n} 次：{example}"
            )
            child, owner = (rb, ra) if _group_count(groups, rb, count) <= _group_count(groups, ra, count) else (ra, rb)
            groups.join(child, owner, why, weak=True)
    # A call jieba mostly cut apart (悟 + 净 …: a name counted in the text) is read from the text: its
    # answers there replace the tokens' own.
    for (called, who), n in links.answers.items():
        if called in st.from_text:
            st.answers[(called, who)] = n
    # Appositions jieba's tags hide (如来 tagged as a time word before 佛祖): B written right after A
    # ≥ 3 times in the text, and after A in ≥ 75 % of the times it follows a name, after two names at most.
    follows: dict[str, Counter[str]] = defaultdict(Counter)
    for (a, b), n in links.adjacent.items():
        follows[b][a] += n
    for b, before in sorted(follows.items()):
        (a, n), total = before.most_common(1)[0], sum(before.values())
        if (
            n >= 3
            and n >= 0.75 * total
            and len(before) <= 2
            and groups.find(a) != groups.find(b)
            and max(lexicon.get(a, 0), lexicon.get(b, 0)) < COMMON_WORD  # 行者声音: a noun of his, no title
            and max(_share(st.tag[a], PLACE_TAGS), _share(st.tag[b], PLACE_TAGS)) < 0.5  # 万寿山五庄观
        ):
            groups.join(b, a, f"「{a}{b}」连写 {n} 次（同位语）")

    # Surnames. A character of the book is a surname when it is a common one or when 老 + it is a word
    # (老孙, 老猪: how a character of that surname speaks of himself or is spoken of).
    # 老 + X also names the one full name starting with X (老猪 → 猪八戒), surname or not.
    selfnames = {w[1] for w, n in count.items() if len(w) == 2 and w[0] == "老" and n >= min_count and starts[w[1]]}
    surname_names: dict[str, list[str]] = defaultdict(list)
    for w in person:
        if (w[0] in surnames or w[0] in selfnames) and w[0] != "老":
            surname_names[w[0]].append(w)
    profiles = _profiles(st, person)
    # A given name: the two characters after a common surname (承志 of 林承志) that end no other name
    # (大圣: 孙大圣, 齐天大圣 — a title), are no honorific (林大人) and no common word (行者 of 孙行者).
    # (A one-character given name is not told from a title in one book: 陈清 and 林总 look alike.)
    tails: Counter[str] = Counter(w[-2:] for w in person if len(w) >= 3)
    groups.given = {
        w: w[1:]
        for w in person
        if len(w) == 3
        and w[0] in surnames
        and tails[w[1:]] == 1
        and w[1:] not in groups.generic
        and w[1:] not in HONORIFICS
        and lexicon.get(w[1:], 0) < COMMON_WORD
    }
    groups.given1 = {
        w: w[1]
        for w in person
        if len(w) == 2
        and w[0] in SURNAMES
        and _share(st.tag[w], PERSON_TAGS) >= 0.5
        and w[1] not in HONORIFIC_CHARS
        and count[w] >= 2 * min_count
    }
    for c, names in surname_names.items():
        names.sort(key=lambda x: (-count[x], x))
        selfname = "老" + c
        # Two names of one surname with the same company (who else is in their paragraphs) are one
        # person named two ways (唐僧 / 唐三藏); two people of one family keep different company.
        if c not in surnames:
            continue
        for i, b in enumerate(names):
            if i == 0:
                continue
            # The company of the two groups so far, not of the two words: a rare full name (唐太宗)
            # speaks through its short forms (太宗). A name joins the more frequent group of its
            # surname whose company is closest: clearly the closest (1.2× the next), or very close.
            gb = groups.members.get(groups.find(b), {b})
            led = [m for m in gb if m[0] in surnames or m[0] in selfnames]
            if led and max(led, key=lambda m: (count[m], m))[0] != c:
                continue  # already in a group led by another surname (金蝉长老 in 唐僧's): settled
            scored = []
            for a in names[:i]:
                if groups.find(a) != groups.find(b) and not any(s[1] == groups.find(a) for s in scored):
                    ga = groups.members.get(groups.find(a), {a})
                    if groups.two_given(ga, gb):
                        continue  # 林镇岳 / 林承志: one surname, two given names — two people of one family
                    scored.append((_cosine(profiles, ga, gb), groups.find(a), a))
            if not scored:
                continue
            scored.sort(reverse=True)
            similarity, _, a = scored[0]
            runner_up = scored[1][0] if len(scored) > 1 else 0.0
            if similarity >= SAME_COMPANY or (similarity >= CLOSE_COMPANY and similarity >= 1.2 * runner_up):
                groups.join(b, a, f"同姓「{c}」且同场人物相近（相似度 {similarity:.2f}）")

    # 老 + surname (老孙, 老猪) names the one bearer of that surname: the group holding the most frequent
    # full name, if it holds most of the surname's full names (老王 names no one where 王母娘娘 is one
    # 王 of many). Read after the company joins, which gather one person's full names (孙悟空, 孙行者).
    for c, names in sorted(surname_names.items()):
        selfname = "老" + c
        full = [x for x in names if len(x) >= 3]
        if count[selfname] < min_count or not full:
            continue
        head = full[0]
        held = sum(count[x] for x in full if groups.find(x) == groups.find(head))
        if held < OLD_SURNAME_HELD * sum(count[x] for x in full) or lexicon.get(selfname, 0) >= COMMON_WORD:
            continue  # several people of that surname (老王), or a word of its own (老人, 老子)
        groups.join(selfname, head, f"「{selfname}」= 老 + 姓「{c}」（{head}）")
        person.add(selfname)

    # Anaphora: 那 / 这 + epithet votes for the name just before it.
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    for epithet, before in st.anaphora:
        if epithet not in person:
            continue
        root_e = groups.find(epithet)
        for name in reversed(before):
            if name in person and groups.find(name) != root_e:
                votes[epithet][groups.find(name)] += 1
                break
    # Baseline: how often each group is the nearest antecedent of any demonstrative phrase at all (the
    # hero is the nearest name before most 那妖 / 那怪); an epithet joins a group only well above it.
    base: Counter[str] = Counter()
    for vote in votes.values():
        base.update(vote)
    base_total = sum(base.values()) or 1
    for epithet, vote in votes.items():
        cast = sum(vote.values())
        if cast < max(5, min_count) or groups.find(epithet) != epithet:
            continue  # too few votes, or the epithet already joined someone by a name signal
        # Lift, not raw votes: the hero speaks to the 呆子 more often than anyone, but 呆子 follows
        # the one it names far more often than that one follows demonstratives in general.
        lifts = sorted(((n / cast) / (base[g] / base_total), n, g) for g, n in vote.items() if n >= max(5, 0.15 * cast))
        if not lifts:
            continue
        lift, n1, top = lifts[-1]
        runner_up = lifts[-2][0] if len(lifts) > 1 else 0.0
        share = n1 / cast
        if lift >= 2.5 and share >= 0.2 and n1 >= 4 * min_count and lift >= 1.5 * runner_up:
            if _share(st.tag[epithet], PERSON_TAGS) < 0.5 or share < 0.6:
                generic.add(epithet)
            groups.join(
                epithet,
                top,
                f"「那/这{epithet}」{cast} 次中 {n1} 次紧接「{top}」之后（指代，高于常例 {lift:.1f} 倍）",
                weak=True,
            )

    # Who answers a form of address: a word called at the head of a line (“悟能，…”) that one
    # group answers at least half the time, far above how often that group answers anyone (lift ≥ 4),
    # is a way of calling that group — proposed as a generic alias (夯货, 悟能), never a plain one.
    _vocatives_join(st, groups, person, chapters, min_count)
    _self_names_join(groups, person, links, min_count)
    # A group's surname + one of its two-character names is its full name (猪 + 悟能 → 猪悟能, when 猪八戒
    # is the group's): jieba cuts it apart, so it is counted in the text.
    for root, names in sorted((r, sorted(m)) for r, m in groups.members.items()):
        family = {w[0] for w in names if len(w) == 3 and (w[0] in surnames or w[0] in selfnames)}
        for c in sorted(family):
            for w in names:
                full = c + w
                if len(w) == 2 and w[0] != c and full not in person and _text_count_add(st, full, chapters, min_count):
                    person.add(full)
                    groups.join(full, root, f"姓「{c}」+「{w}」（{w} 已归入「{root}」）")

    # Surname + a title someone already answers to (唐 + 长老, when 长老 is 唐僧's): that someone.
    for w in sorted(person, key=lambda x: (-count[x], x)):
        c, title = w[0], w[1:]
        if c in surnames and len(title) >= 2 and title in person and groups.find(w) == w:
            owner = groups.find(title)
            if owner != title or groups.members.get(owner):
                if any(m[0] == c and m != w for m in groups.members.get(owner, {owner})):
                    groups.join(w, owner, f"姓「{c}」+「{title}」（{title} 已归入「{owner}」）")

    # Pinyin variants of a frequent name. pypinyin is imported here, not at the top: its dictionaries take
    # ~0.2 s to load, and this module is imported by the admin (autodiscovered by every process, `story` too).
    from pypinyin import lazy_pinyin  # noqa: PLC0415

    by_pinyin: dict[str, list[str]] = defaultdict(list)
    for w in person:
        by_pinyin["".join(lazy_pinyin(w))].append(w)
    for names in by_pinyin.values():
        if len(names) > 1:
            names.sort(key=lambda x: (-count[x], x))
            for other in names[1:]:
                if count[other] * 5 <= count[names[0]] and len(other) == len(names[0]):
                    groups.join(
                        other, names[0], f"与「{names[0]}」同音（拼音 {''.join(lazy_pinyin(other))}）", variant=True
                    )

    # Name + title written together often (哪吒 + 太子) is itself a name of that person (哪吒太子): jieba
    # cuts it in two, so it is no token, but a reader and the mention scan see it whole.
    for (a, b), n in st.adjacent.items():
        compound = a + b
        if (
            a in person
            and b in person
            and (b in generic or b in title_words or groups.find(a) == groups.find(b))
            and a not in generic
            and n >= min_count
            and compound not in person
            and len(compound) <= 6
        ):
            _compound_add(st, person, a, b, n)
            groups.join(compound, a, f"「{a}」+ 称号「{b}」连写 {n} 次")
        elif (
            b in person
            and a not in person
            and n >= min_count
            and len(compound) <= 6
            and compound not in person
            and _share(st.tag[a], PLACE_TAGS) >= 0.5
            and b not in generic  # 乌鸡 + 国王 is one king of many: no name of 国王's group
        ):
            # A place + a person word (南海 + 菩萨, 南海 + 观音) is that person by where they live.
            _compound_add(st, person, a, b, n)
            groups.join(compound, b, f"地名「{a}」+「{b}」连写 {n} 次")

    # Abbreviations: a name made of some of a longer name's characters in order, the first included
    # (牛王 ← 牛魔王, 玉帝 ← 玉皇大帝), the way Chinese shortens names.
    for a in sorted(person, key=lambda x: (-len(x), -count[x], x)):
        if len(a) < 3:
            continue
        for b in person:
            if 2 <= len(b) < len(a) and b[0] == a[0] and b not in a and _subsequence(b, a):
                groups.join(b, a, f"「{b}」是「{a}」的简称")

    members: dict[str, list[str]] = defaultdict(list)
    for w in person:
        members[groups.find(w)].append(w)
    proposals = []
    for names in members.values():
        plain = [w for w in names if w not in generic]
        if not plain:
            continue  # a title alone (大王, 师父 with no owner) is not a character
        said = sum(count[w] for w in plain)
        if sum(st.quoted[w] for w in plain) >= 0.9 * said and sum(st.speaker[w] for w in plain) < 0.05 * said:
            continue  # said only by characters, never by the narrator, nor speaking: a form of address (师兄)
        # Not the tail of a fuller member (菩萨 of 观音菩萨, 八戒 of 猪八戒): that is its short form.
        full = [w for w in plain if not any(o != w and o.endswith(w) for o in names)] or plain
        canonical = max(full, key=lambda w: (_name_score(st, w), w))
        total = sum(count[w] for w in names)
        spk = sum(st.speaker[w] for w in names)
        chaps = set().union(*(st.chapters[w] for w in names))
        nr = sum(_share(st.tag[w], PERSON_TAGS) * count[w] for w in names) / total
        confidence = round(min(0.99, 0.35 * nr + 0.35 * min(1.0, spk / max(1, 0.05 * total)) + 0.3 * _spread(chaps)), 2)
        aliases = [
            ProposedAlias(w, count[w], w in generic, groups.why.get(w) or groups.why.get(canonical, "同组"))
            for w in sorted(names, key=lambda x: (-count[x], x))
            if w != canonical
        ]
        proposals.append(
            Proposal(
                type="角色",
                name=canonical,
                count=total,
                first_chapter=min(st.first[w] for w in names),
                chapters=len(chaps),
                confidence=confidence,
                aliases=aliases,
                signals={
                    "speaker": spk,
                    "person_tag_share_pct": round(100 * nr),
                    "named": sum(st.named[w] for w in names),
                },
            )
        )
    # Characters act: a group seldom heard speaking (宝贝, 金光: words jieba tags as names) ranks below
    # one that often does. The square root of the count lets how a group behaves weigh as much as how
    # often it is written (a minor character introduced by name above a frequent common word).
    proposals.sort(key=lambda p: (-math.sqrt(p.count) * (0.2 + p.confidence) * _voice(p), p.name))
    _party_join(st, proposals, min_count)
    proposals.sort(key=lambda p: (-math.sqrt(p.count) * (0.2 + p.confidence) * _voice(p), p.name))
    return proposals[:limit]


def _party_join(st: _Stats, proposals: list[Proposal], min_count: int) -> None:
    """A silent character who travels with the protagonists (a horse, a mute servant) acts without
    speaking: a group pointed at as an individual (那白马) whose paragraphs hold the whole party as
    often as the party's own members' paragraphs hold the rest of it is one of them, and ranks as if
    heard. The party: the leading groups, down to the first score below half the one before (≥ 2)."""
    if len(proposals) < 3:
        return
    scores = [math.sqrt(p.count) * (0.2 + p.confidence) * _voice(p) for p in proposals]
    size = 1
    while size < min(len(proposals), 8) and scores[size] >= 0.5 * scores[size - 1]:
        size += 1
    if size < 2:
        return
    group_of: dict[str, int] = {}
    for i, p in enumerate(proposals):
        for name in p.names():
            group_of.setdefault(name, i)
    paragraphs: dict[int, set[int]] = defaultdict(set)
    for index, names in st.sentences:
        paragraphs[index].update(group_of[n] for n in names if n in group_of)
    party = set(range(size))
    held: Counter[int] = Counter()  # paragraphs of a group holding every party member but itself
    seen: Counter[int] = Counter()
    for groups_here in paragraphs.values():
        for g in groups_here:
            seen[g] += 1
            if party - {g} <= groups_here:
                held[g] += 1
    level = sum(held[g] / seen[g] for g in party if seen[g]) / size
    for g in range(size, len(proposals)):
        p = proposals[g]
        pointed = sum(st.demonstrative[w] for w in p.names() if not any(a.alias == w and a.generic for a in p.aliases))
        if (
            seen[g] >= 2 * min_count
            and held[g] >= min_count  # a party never seen whole (level 0) makes no one its member
            and pointed >= min_count
            and held[g] / seen[g] >= level
            and _voice(p) < 1
        ):
            p.signals["party_pct"] = round(100 * held[g] / seen[g])


@dataclass
class _Links:
    self_named: Counter[tuple[str, str]]  # (speaker, the name he gives himself)
    copula: Counter[tuple[str, str]]  # (X, Y) of X乃Y / X，即Y / X原是Y
    answers: Counter[tuple[str, str]]  # (name called at the head of a line, who answered)
    adjacent: Counter[tuple[str, str]]  # (A, B) written back to back (如来佛祖)
    said: Counter[tuple[str, str]]  # (speaker, a name inside his attributed line): how he speaks of whom
    lines: Counter[str]  # attributed lines per speaker


def _text_links(chapters: list[tuple[int, str]], names: set[str]) -> _Links:
    """Links read from the raw text with the names found so far (longest match first), where jieba's
    tokens are unreliable: a name is often cut differently each time it is written."""
    import ahocorasick  # noqa: PLC0415 — pinned (the mention scan uses it); only discovery needs it here

    links = _Links(Counter(), Counter(), Counter(), Counter(), Counter(), Counter())
    if not names:
        return links
    automaton = ahocorasick.Automaton()
    for w in names:
        automaton.add_word(w, w)
    automaton.make_automaton()
    for _, body in chapters:
        ends: dict[int, str] = {}
        starts: dict[int, str] = {}
        hits = [(last - len(w) + 1, last + 1, w) for last, w in automaton.iter_long(body)]
        for k, (start, end, w) in enumerate(hits):
            ends[end], starts[start] = w, w
            if not k:
                continue
            start_before, end_before, before = hits[k - 1]
            if end_before == start:
                links.adjacent[(before, w)] += 1
                continue
            between = body[end_before:start].lstrip("，,")
            cut_short = k + 1 < len(hits) and hits[k + 1][0] == end  # 白石 + 先生: Y is longer than its match
            if between in COPULA and body[end : end + 1] not in COPULA_NOT_SAME and before != w and not cut_short:
                links.copula[(before, w)] += 1
        called: tuple[str, str, int] | None = None
        hit_starts = [start for start, _, _ in hits]
        for quote in _QUOTE.finditer(body):
            q = quote.start()
            speaker = ""
            verb = _ATTRIBUTION.search(body, max(0, q - 6), q + 1)
            if verb:
                for gap in range(3):  # X道 / X笑道 / X冷笑道
                    if verb.start() - gap in ends:
                        speaker = ends[verb.start() - gap]
                        break
            paragraph = body.count("\n", 0, q)
            if called and speaker and speaker != called[1] and paragraph - called[2] <= 2:
                links.answers[(called[0], speaker)] += 1
            called = None
            head = starts.get(q + 1)
            if head and body[q + 1 + len(head) : q + 2 + len(head)] in VOCATIVE_END:
                called = (head, speaker, paragraph)
            if not speaker:
                continue
            links.lines[speaker] += 1
            k = bisect.bisect_left(hit_starts, quote.start(1))
            while k < len(hits) and hits[k][1] <= quote.end(1):
                links.said[(speaker, hits[k][2])] += 1
                k += 1
            for match in _SELF_NAMED.finditer(quote.group(1)):
                w = starts.get(quote.start(1) + match.end())
                after = body[quote.start(1) + match.end() + len(w or "") :][:1]
                if w and w != speaker and after in _CLAUSE_END:
                    links.self_named[(speaker, w)] += 1
    return links


def _group_count(groups: _Groups, root: str, count: Counter[str]) -> int:
    return sum(count[w] for w in groups.members.get(root, {root}))


def _compound_add(st: _Stats, person: set[str], a: str, b: str, n: int) -> None:
    compound = a + b
    person.add(compound)
    st.count[compound] = n
    st.tag[compound]["nr"] = n
    st.first[compound] = st.adjacent_first[(a, b)]
    st.chapters[compound] = st.adjacent_chapters[(a, b)]


def _voice(p: Proposal) -> float:
    """How much a group behaves like a person: heard speaking, or introduced by a naming pattern
    (名唤红孩儿，号圣婴大王) — a narrator names people, not things."""
    if "party_pct" in p.signals:
        return 1.0  # travels with the protagonists: acts as one of them (_party_join)
    voice = 0.1 + 0.9 * min(1.0, p.signals["speaker"] / max(1.0, 0.05 * p.count))
    named = p.signals["named"]
    return voice * (1 + min(named, 4) / 2) if named >= 2 else voice


def _name_score(st: _Stats, w: str) -> float:
    """The canonical name: the most name-like member — tagged as a person, full (3 characters), frequent.
    A name counted in the text (jieba never cut it whole) has no tag of jieba's to show."""
    nr = 0.0 if w in st.from_text else _share(st.tag[w], PERSON_TAGS)
    return nr * 2 + (0.5 if len(w) == 3 else 0) + math.log10(1 + st.count[w])


def _spread(chaps: set[int]) -> float:
    return min(1.0, len(chaps) / 10)


def _given_names_recover(
    st: _Stats, person: set[str], surnames: set[str], chapters: list[tuple[int, str]], min_count: int
) -> None:
    """The given name of a surname + given name (悟能 of 猪悟能) is how the text mostly calls someone,
    but jieba often cuts it differently each time (悟 + 能…), so it is no token: count it in the text."""
    for a in sorted(person):
        given = a[1:]
        if len(a) != 3 or a[0] not in surnames or given in person or st.count[given] >= min_count:
            continue
        seen = [(number, body.count(given)) for number, body in chapters if given in body]
        total = sum(n for _, n in seen)
        if total >= min_count:
            person.add(given)
            st.from_text.add(given)
            st.count[given] = total
            st.tag[given]["nr"] = total
            st.first[given] = seen[0][0]
            st.chapters[given] = {number for number, _ in seen}


def _named_count(st: _Stats, chapters: list[tuple[int, str]], min_count: int) -> set[str]:
    """A name glued back after a naming word (罗刹女, 圣婴大王) is no token: count it in the text.
    Such a name counts as a name (the nr tag) when it was named twice, or once in a chain with
    another name (名唤罗刹女，又唤铁扇公主). A clause after a naming word that jieba cuts with a
    particle or a verb in it (法名了尘，: 了 + 尘) is one when the text shows it speaking (了尘道：“)
    at least twice: its speech is counted in the text too, since jieba never cuts it whole."""
    chained = set(st.chains)
    for (owner, name), k in sorted(st.clause_named.items()):
        if st.count[name] >= min_count or not _HAN.match(name):
            continue
        said = re.compile(re.escape(name) + r"[\u4e00-\u9fff]?[道说曰][：:]?“")
        speaks = sum(len(said.findall(body)) for _, body in chapters)
        if speaks >= 2 and _text_count_add(st, name, chapters, min_count):
            st.speaker[name] = speaks
            st.named[name] += k
            if owner:
                st.naming[(owner, name)] += k
    for name, k in st.named.items():
        if st.count[name] >= min_count or not (k >= 2 or name in chained) or not _HAN.match(name):
            continue
        seen = [(number, body.count(name)) for number, body in chapters if name in body]
        total = sum(n for _, n in seen)
        if total >= min_count:
            st.count[name] = total
            st.tag[name] = Counter({"nr": total})
            st.first[name] = seen[0][0]
            st.chapters[name] = {number for number, _ in seen}
    return chained


def _vocatives_join(
    st: _Stats, groups: _Groups, person: set[str], chapters: list[tuple[int, str]], min_count: int
) -> None:
    answered: dict[str, Counter[str]] = defaultdict(Counter)
    base: Counter[str] = Counter()
    for (called, who), n in st.answers.items():
        if who in person:
            answered[called][groups.find(who)] += n
            base[groups.find(who)] += n
    total_answers = sum(base.values()) or 1
    for called, by_group in sorted(answered.items()):
        total = sum(by_group.values())
        top, n = by_group.most_common(1)[0]
        if (
            total < 4
            or n < 0.5 * total
            or (n / total) / (base[top] / total_answers) < 4
            or any(c in called for c in "你我他这那")
            or not _only_its_full_forms(groups, called)
            or all(m in groups.generic for m in groups.members.get(top, {top}))
        ):
            continue
        if called not in person:
            seen = [(number, body.count(called)) for number, body in chapters if called in body]
            if sum(k for _, k in seen) < min_count:
                continue
            st.count[called] = sum(k for _, k in seen)
            st.first[called] = seen[0][0]
            st.chapters[called] = {number for number, _ in seen}
            person.add(called)
        if groups.join(called, top, f"呼「{called}」的 {total} 次中 {n} 次由「{top}」答话", weak=True):
            groups.generic.add(called)


def _text_count_add(st: _Stats, w: str, chapters: list[tuple[int, str]], min_count: int) -> bool:
    """Count a name jieba never cuts whole in the text itself; record it when it occurs ≥ ``min_count`` times."""
    seen = [(number, body.count(w)) for number, body in chapters if w in body]
    total = sum(n for _, n in seen)
    if total < min_count:
        return False
    st.from_text.add(w)
    st.count[w] = total
    st.tag[w] = Counter({"nr": total})
    st.first[w] = seen[0][0]
    st.chapters[w] = {number for number, _ in seen}
    return True


def _self_names_join(groups: _Groups, person: set[str], links: _Links, min_count: int) -> None:
    """A name its own group says of itself in its lines (老孙: ≥ 75 % of the lines that say it are that
    group's; not a first-person word of the language, 老夫) is a self-name; another speaker who says it about as often in his own lines (≥ a quarter of
    the group's rate, ≥ 3 lines) is that group under another name (猴王道：“…看不见老孙！”)."""
    said_by: dict[str, Counter[str]] = defaultdict(Counter)
    lines: Counter[str] = Counter()
    for (speaker, w), n in links.said.items():
        if speaker in person and w in person and speaker != w:
            said_by[w][groups.find(speaker)] += n
    for speaker, n in links.lines.items():
        if speaker in person:
            lines[groups.find(speaker)] += n
    all_lines = sum(lines.values()) or 1
    for w, by_group in sorted(said_by.items()):
        own, total = groups.find(w), sum(by_group.values())
        # Its own group's lines say it far more than their share of all lines would (the hero speaks
        # most lines: a name of his said mostly in them is no self-name on that alone).
        share = by_group[own] / total if total else 0.0
        if (
            w in SELF_WORDS
            or w in groups.generic
            or total < 2 * min_count
            or share < max(0.75, 1.5 * lines[own] / all_lines)
        ):
            continue
        rate = by_group[own] / (lines[own] or 1)
        for other, n in sorted(by_group.items(), key=lambda kv: (-kv[1], kv[0])):
            if other == groups.find(w) or n < 3 or n / (lines[other] or 1) < 0.25 * rate:
                continue
            if all(m in groups.generic for m in groups.members.get(other, {other})):
                continue
            groups.join(other, own, f"其对白中 {n} 次自称「{w}」（「{w}」是「{own}」自己对白里的自称）")


def _only_its_full_forms(groups: _Groups, called: str) -> bool:
    """``called`` is alone in its group, or with the longer names holding it only (悟净 with 沙悟净):
    a group no other signal has made yet, which an answered call may join to someone."""
    members = groups.members.get(groups.find(called), {called})
    return all(called in m for m in members)


def _parts(w: str, person: set[str]) -> set[str]:
    """``w`` and the names inside it."""
    return {w} | {w[i:j] for i in range(len(w)) for j in range(i + 2, len(w) + 1)} & person


def _subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def _profiles(st: _Stats, person: set[str]) -> dict[str, Counter[str]]:
    """For each name, how many paragraphs it shares with each other name."""
    paragraphs: dict[int, set[str]] = defaultdict(set)
    for index, names in st.sentences:
        paragraphs[index].update(n for n in names if n in person)
    profiles: dict[str, Counter[str]] = defaultdict(Counter)
    df: Counter[str] = Counter()
    for names in paragraphs.values():
        if len(names) > 12:
            continue  # a list of names (a roll call) says nothing about anyone's company
        df.update(names)
        for a in names:
            for b in names:
                if a != b:
                    profiles[a][b] += 1
    # Meeting the protagonists says little (everyone does): each companion weighs by how rare it is
    # (inverse document frequency over the paragraphs).
    total = len(paragraphs) or 1
    idf = {k: math.log(total / n) for k, n in df.items()}
    for profile in profiles.values():
        for k in profile:
            profile[k] *= idf[k]
    return profiles


def _cosine(profiles: dict[str, Counter[str]], a: set[str], b: set[str]) -> float:
    pa: Counter[str] = Counter()
    pb: Counter[str] = Counter()
    for name in a:
        pa.update(profiles.get(name, {}))
    for name in b:
        pb.update(profiles.get(name, {}))
    keys = (pa.keys() | pb.keys()) - a - b
    dot = sum(pa[k] * pb[k] for k in keys)
    na = math.sqrt(sum(pa[k] ** 2 for k in keys))
    nb = math.sqrt(sum(pb[k] ** 2 for k in keys))
    return dot / (na * nb) if na and nb else 0.0


def _sentence_pairs(st: _Stats, person: set[str]) -> dict[frozenset[str], int]:
    pairs: Counter[frozenset[str]] = Counter()
    for _, names in st.sentences:
        present = sorted({n for n in names if n in person})
        if 1 < len(present) <= 8:
            for i, a in enumerate(present):
                for b in present[i + 1 :]:
                    pairs[frozenset((a, b))] += 1
    return pairs


def _tagged(
    st: _Stats, *, type_name: str, tags: frozenset[str], min_count: int, taken: set[str], limit: int
) -> list[Proposal]:
    props = []
    for w, n in st.count.items():
        if n < min_count or w in taken:
            continue
        share = _share(st.tag[w], tags)
        if share < 0.6:
            continue
        chaps = st.chapters[w]
        props.append(
            Proposal(
                type=type_name,
                name=w,
                count=n,
                first_chapter=st.first[w],
                chapters=len(chaps),
                confidence=round(min(0.95, 0.6 * share + 0.4 * _spread(chaps)), 2),
                signals={"tag_share_pct": round(100 * share)},
            )
        )
    props.sort(key=lambda p: (-p.count, p.name))
    return props[:limit]


def _samples(proposals: list[Proposal], chapters: list[tuple[int, str]], per: int = 3) -> None:
    """A few lines where each proposal's name occurs (first occurrences, in reading order)."""
    for p in proposals:
        found: list[str] = []
        for number, body in chapters:
            start = 0
            while len(found) < per:
                i = body.find(p.name, start)
                if i < 0:
                    break
                lo, hi = max(0, i - 20), min(len(body), i + len(p.name) + 20)
                found.append(f"第{number}章：{body[lo:hi].replace(chr(10), ' ').strip()}")
                start = body.find("\n", i)
                if start < 0:
                    break
            if len(found) >= per:
                break
        p.samples = found
