"""One walk over the (repaired) token stream: the counts every signal of discovery reads (_Stats), and
the union-find of names that keeps two people apart (_Groups)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from entities.discovery.vocab import (
    _CLAUSE_END,
    _GLUE_HEAD_TAGS,
    _HAN,
    _STATE_AFTER,
    APART_STRONG,
    APART_WEAK,
    COLLECTIVE,
    DEMONSTRATIVES,
    DOUBLE_GIVEN_TAGS,
    DOUBLE_SURNAMES,
    FIRST_PERSON,
    GENERIC_APART,
    GIVEN_TAGS,
    HEAD_SPAN,
    HONORIFIC_CHARS,
    HUMBLE_SELF,
    INNER_QUOTES,
    NAMING,
    NOT_SPEAKER_TAGS,
    NOT_SPEECH,
    NOUNISH,
    OBJECT_MARKERS,
    PERSON_TAGS,
    SELF_INTRO,
    SENTENCE_END,
    SPEECH_END,
    SPLIT_SPEAKER_TAGS,
    SURNAMES,
    VOCATIVE_END,
    Segmenter,
    Token,
)


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
        # The person word heading the current clause of narration and the tokens since (萧承顾谓陆澄曰:
        # 萧承 speaks); not inside a quote, where a clause is a line, not the narrator's attribution.
        head, since_head, at_head = "", 99, True
        for w, f in tokens:
            since_speech += 1
            since_head += 1
            if w in _CLAUSE_END or w == "“" or "\n" in w:
                head, at_head = "", True
            elif at_head:
                head, since_head, at_head = (w if f in PERSON_TAGS and _is_word(w) and not in_quote else ""), 0, False
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
                _word_count(
                    st, number, (w, f), (prev_w, prev_f, prev2_w), in_quote, pending_intro, (para, nouns, sentence)
                )
            elif w.endswith(SPEECH_END) and len(w) <= 3 and w not in NOT_SPEECH:
                speaker_last, since_speech, called = _speech_count(
                    st,
                    (prev_w, prev_f, prev2_w, prev2_f, prev3_w),
                    (speaker_last, since_speech, called),
                    head if since_head <= HEAD_SPAN else "",
                )
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


def _word_count(
    st: _Stats,
    number: int,
    token: Token,
    prev: tuple[str, str, str],
    in_quote: bool,
    pending_intro: str,
    lists: tuple[list[str], list[str], list[str]],
) -> None:
    """A word of the walk: its counts, what precedes it (a demonstrative, a noun), and the paragraph's,
    the sentence's and the nouns' lists it joins."""
    w, f = token
    prev_w, prev_f, prev2_w = prev
    para, nouns, sentence = lists
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
    if (prev_f in NOUNISH and prev_w not in HUMBLE_SELF) or (prev_f == "r" and prev_w not in DEMONSTRATIVES):
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


def _speech_count(
    st: _Stats,
    prev: tuple[str, str, str, str, str],
    state: tuple[str, int, tuple[str, str, int] | None],
    head: str = "",
) -> tuple[str, int, tuple[str, str, int] | None]:
    """A speech verb of the walk (X道 / X笑道): who speaks, and the call (“悟净，…”) it answers.
    ``head``: the person word heading the verb's clause a few tokens before it, who speaks when nobody
    stands right before the verb (萧承顾谓陆澄曰, 田虎听了大喜道: the classical register puts a whole
    predicate between the subject and 曰).
    Returns the walk's (last speaker, tokens since the last attribution, call awaiting an answer)."""
    prev_w, prev_f, prev2_w, prev2_f, prev3_w = prev
    speaker_last, since_speech, called = state
    # X道 / X笑道; jieba may also cut 笑道 into 笑 + 道: one character between is allowed.
    who, who_f, before = (prev_w, prev_f, prev2_w) if _is_word(prev_w) else (prev2_w, prev2_f, prev3_w)
    if (
        _is_word(who)
        and (who != prev2_w or len(prev_w) == 1)
        and who_f[:1] not in NOT_SPEAKER_TAGS
        and before not in OBJECT_MARKERS
        and not (len(before) == 2 and before.endswith("谓"))  # 顾谓 / 笑谓 / 乃谓 + the addressee
        # 韩烈 + 大喜/n + 曰: the word before the verb is the predicate of the person heading the clause.
        and not (head and head == prev2_w and who == prev_w and who_f not in PERSON_TAGS)
    ):
        st.speaker[who] += 1
        speaker_last = who
        since_speech = 0
        if called and st.paragraphs - called[2] <= 2 and who != called[1]:
            # “悟净，…” answered by 沙僧道: the one called answers.
            st.answers[(called[0], who)] += 1
        called = None
    elif head:
        st.speaker[head] += 1
        speaker_last, since_speech = head, 0
    elif prev_f[:1] == "v" and len(prev_w) == 2 and prev2_f in NOUNISH and _is_word(prev2_w):
        # X + gesture + 道 (唐僧合掌道): X says the quote that follows, though a verb sits
        # between; not counted as a speaker (the gesture may be anyone's).
        speaker_last = prev2_w
        since_speech = 0
    return speaker_last, since_speech, called


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
        if len(w) == 2 and w in DOUBLE_SURNAMES and i + 1 < n:
            nxt, nf = tokens[i + 1]
            if len(nxt) == 1 and nf in DOUBLE_GIVEN_TAGS and nxt not in HONORIFIC_CHARS and _HAN.match(nxt):
                out.append((w + nxt, "nr"))  # 令狐 + 峻: a compound surname and a one-character given name
                i += 2
                continue
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
        # Links too weak to merge on (a name that sounds like another: 张翼 / 张仪): child → (owner, why).
        # Never merged; the child's proposal goes to the lower band with the link as its reason, for a curator to decide.
        self.uncertain: dict[str, tuple[str, str]] = {}

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

    def maybe(self, child: str, owner: str, why: str) -> None:
        """An uncertain link: kept as a reason, never a merge (the first one per name)."""
        if self.find(child) != self.find(owner):
            self.uncertain.setdefault(child, (owner, why))

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


def _share(counter: Counter[str], tags: frozenset[str]) -> float:
    total = sum(counter.values())
    return sum(n for f, n in counter.items() if f in tags) / total if total else 0.0
