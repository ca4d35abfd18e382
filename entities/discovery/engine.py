"""Text → entity proposals: the cast of a novel found from its text alone (no model calls, no network).

Pure: chapters in, proposals out; no Django. One part-of-speech pass of jieba (its dictionary and HMM
ship inside the package) is the segmenter; everything after it is counting over that one token stream,
so the whole run costs little more than the segmenter's own pass.

Modules: ``bounds`` (hostile text: size, long lines, text that is no language), ``textstats`` (the
book's own characters repair the tokens first: speech verbs, learned edges, names jieba never emits
whole, group words), ``collect`` (one walk over the tokens: the counts; the union-find of names),
``persons`` (who is a person, which names are one), ``links`` (the grouping signals' helpers, places
and factions, samples), ``vocab`` (the language's closed word classes). This module ties them.

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

from collections.abc import Iterable, Mapping

from entities.discovery.bounds import MAX_CHARS, chapters_bounded, segment_bounded
from entities.discovery.collect import _collect
from entities.discovery.links import _samples, _tagged
from entities.discovery.persons import _persons
from entities.discovery.textstats import book_repair
from entities.discovery.vocab import (
    ORG_TAGS,
    PERSON_TAGS,
    PLACE_TAGS,
    SURNAMES,
    TYPES,
    Proposal,
    ProposedAlias,
    Segmenter,
    Token,
)

__all__ = [
    "TYPES",
    "Proposal",
    "ProposedAlias",
    "Segmenter",
    "Token",
    "discover",
    "jieba_lexicon",
    "jieba_plain",
    "jieba_segment",
    "jieba_tags",
]


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
    # One tuple per distinct (word, tag): a book's millions of tokens are pointers into a small pool, not
    # millions of pairs (peak memory, D1).
    pool: dict[Token, Token] = {}
    base = segment or jieba_segment

    def pooled(text: str) -> list[Token]:
        return [pool.setdefault(t, t) for t in base(text)]

    tokens = [segment_bounded(body, pooled, lexicon=lexicon, plain=plain, note=note) for _, body in chapters]
    pool.clear()
    if bounds is not None:
        bounds.update(note)
    # The book's own text repairs the tokens first (textstats: edges learned, glued forms cut, names
    # jieba never emits whole joined); everything below counts over the repaired stream.
    tokens, _learned = book_repair(
        chapters, tokens, lexicon=lexicon, tags=tags, min_count=min_count, person_tags=PERSON_TAGS, surnames=SURNAMES
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
            agency=_learned["agency"],
            tags=tags,
        )
    taken = {n for p in out for n in p.names()}
    for type_name, tags in (("地点", PLACE_TAGS), ("势力", ORG_TAGS)):
        if type_name in wanted:
            out += _tagged(st, type_name=type_name, tags=tags, min_count=min_count, taken=taken, limit=limit)
    _samples(out, chapters)
    return out
