"""The routing engine of the story system: which genre route a query takes (the genre profiles of
storysystem/profiles.py, the thesaurus and negation of storysystem/thesaurus.py, and the craft
vocabulary here). The StorySystemDict a route builds is storysystem/storydict.py's.

Pure reads of the in-process library index (storysystem/search.py): no stored setting is read or
written here. ``storysystem.selectors`` reads the stored settings and answers through this engine;
``storysystem.services`` persists what it builds.
"""

import math
import re
import threading
from collections import defaultdict
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from storysystem.conf import conf
from storysystem.profiles import RouteProfiles, profile_terms, route_profiles_get
from storysystem.search import FUNCTION_CHARS, TAG_COLUMNS, Doc, index_get, split_multi
from storysystem.thesaurus import THESAURUS_FIELD, negation_strip

GENERIC = "通用"
ROUTE_NAME = "题材/流派"
AUTHOR = "作者"


def anti_patterns_of(payload: dict[str, Any]) -> list[dict[str, str]]:
    """The normalized anti-patterns of one entry (computed once, when the index is built)."""
    return [dict(item) for item in payload.get("anti_patterns", ())]


# ---------------------------------------------------------------- routing


def _route_rows() -> list[Doc]:
    return [d for d in index_get().docs if ROUTE_NAME in d.payload["fields"]]


def _row_weight(doc: Doc) -> float:
    try:
        return float(doc.payload["fields"].get("权重") or 1.0)
    except ValueError:
        return 1.0


def _row_terms(doc: Doc) -> list[tuple[str, str]]:
    fields = doc.payload["fields"]
    return [
        (column, term)
        for column in conf("route_field_weights")
        for term in split_multi(fields.get(column, ""))
        if term != "全部"
    ]


def _candidate(doc: Doc, score: float, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    fields = doc.payload["fields"]
    return {
        "code": doc.code,
        "table": doc.table,
        "library": doc.library,
        "genre": fields.get(ROUTE_NAME, ""),
        "canonical_genre": fields.get("canonical_genre", ""),
        "score": round(score, 4),
        "evidence": evidence,
    }


def _keyword_hits(query: str, rows: list[Doc]) -> list[tuple[float, Doc, list[dict[str, Any]]]]:
    weights = conf("route_field_weights")
    hits = []
    for doc in rows:
        evidence, score = [], 0.0
        for column, term in _row_terms(doc):
            if term and term in query:
                evidence.append({"field": column, "term": term, "match": "exact"})
                score += weights[column] * len(term)
        if evidence:
            hits.append((score * _row_weight(doc), doc, evidence))
    return hits


def _fuzzy_score(term: str, query: str) -> tuple[float, int]:
    matcher = SequenceMatcher(None, term, query, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    coverage = matched / len(term)
    return 0.7 * coverage + 0.3 * matcher.ratio(), matched


def _fuzzy_hits(query: str, rows: list[Doc]) -> list[tuple[float, Doc, list[dict[str, Any]]]]:
    threshold = float(conf("fuzzy_threshold"))
    query_chars = set(query)
    hits = []
    for doc in rows:
        best: tuple[float, str, str] | None = None
        for column, term in _row_terms(doc):
            if sum(c in query_chars for c in term) < 2:
                continue  # cannot reach 2 matched characters: skip the costly matcher
            score, matched = _fuzzy_score(term, query)
            if matched >= 2 and score >= threshold and (best is None or score > best[0]):
                best = (score, column, term)
        if best:
            evidence = [{"field": best[1], "term": best[2], "match": "fuzzy", "similarity": round(best[0], 4)}]
            hits.append((best[0] * _row_weight(doc), doc, evidence))
    return hits


def _explicit_hits(genre: str, query: str, rows: list[Doc]) -> list[tuple[float, Doc, list[dict[str, Any]]]]:
    hits = []
    for doc in rows:
        fields = doc.payload["fields"]
        if fields.get(ROUTE_NAME, "").strip() == genre:
            evidence, score = [{"field": ROUTE_NAME, "term": genre, "match": "explicit"}], 3.0
        elif genre in split_multi(fields.get("题材别名", "")):
            evidence, score = [{"field": "题材别名", "term": genre, "match": "explicit"}], 2.0
        elif fields.get("canonical_genre", "").strip() == genre:
            evidence, score = [{"field": "canonical_genre", "term": genre, "match": "explicit"}], 1.0
        else:
            continue
        # Among rows that all carry the genre, the query decides (e.g. 悬疑 → 规则怪谈 vs 推理).
        bonus = sum(h[0] for h in _keyword_hits(query, [doc])) / 100 if query else 0.0
        hits.append((score + bonus, doc, evidence))
    return hits


def _rank(hits: list[tuple[float, Doc, list[dict[str, Any]]]]) -> list[tuple[float, Doc, list[dict[str, Any]]]]:
    return sorted(hits, key=lambda h: (-h[0], h[1].library != "seed", h[1].code))


STRONG_FIELDS = frozenset({ROUTE_NAME, "题材别名"})


# Columns that hold terms (tags), as opposed to prose: one term from a tag is evidence on its own.
TAG_FIELDS = frozenset({ROUTE_NAME, "题材别名", "关键词", "默认查询词", "意图与同义词", "必选爽点", THESAURUS_FIELD})


def _profile_supported(evidence: list[dict[str, Any]]) -> bool:
    """Whether a profile match rests on more than one coincidental bigram of a prose column: two
    distinct words (two characters or more), or one from a tag column (this row's or a library
    entry's ``关键词`` / ``意图与同义词``)."""
    words = [e for e in evidence if len(e["term"]) > 1]
    return len(words) >= 2 or any(e["field"].rsplit(".", 1)[-1] in TAG_FIELDS for e in words)


def _profile_hits(
    query: str,
    skip: frozenset[str] = frozenset(),
    *,
    scale: dict[str, float] | None = None,
    supported: bool = True,
) -> tuple[list[tuple[float, Doc, list[dict[str, Any]]]], str]:
    """The genre-profile ranking of ``query`` (without the terms in ``skip``) when its best row is
    clear enough, else ([], the reason it is not): the best score must reach
    ``route_profile_min_score`` and lead the runner-up by ``route_profile_margin`` of itself."""
    profiles = route_profiles_get()
    scored = [
        (s * _row_weight(profiles.rows[i]), profiles.rows[i], ev)
        for s, i, ev in profiles.score(query, skip=skip, scale=scale)
    ]
    ranked = _rank(scored)
    minimum, margin = float(conf("route_profile_min_score")), float(conf("route_profile_margin"))
    if not ranked:
        return [], "查询与任何题材的画像都没有共同的词"
    best = ranked[0][0]
    second = ranked[1][0] if len(ranked) > 1 else 0.0
    if best < minimum:
        return (
            [],
            f"题材画像最高分 {best:.2f}（{ranked[0][1].payload['fields'].get(ROUTE_NAME, '')}）低于阈值 {minimum:g}",
        )
    if supported and not _profile_supported(ranked[0][2]):
        term = ranked[0][2][0]["term"]
        return (
            [],
            f"题材画像只凭正文里一个偶然的词「{term}」（{ranked[0][1].payload['fields'].get(ROUTE_NAME, '')}），不足为据",
        )
    if best - second < margin * best:
        names = "、".join(h[1].payload["fields"].get(ROUTE_NAME, "") for h in ranked[:2])
        return [], f"题材画像前两名（{names}）分差 {best - second:.2f} 不足最高分的 {margin:.0%}，无法判定"
    return ranked, ""


# ---------------------------------------------------------------- craft questions


@dataclass(frozen=True)
class CraftVocabulary:
    """The library's terms: term -> (evenness over the genres, entries holding it)."""

    key: tuple
    words: dict[str, tuple[float, int]]


_craft_lock = threading.Lock()
_craft_cached: CraftVocabulary | None = None


def craft_vocabulary() -> CraftVocabulary:
    """How evenly the enabled library spreads each term over the genres, computed from its own
    columns (``route_craft_columns``: the technique and type columns, tags and prose of every entry
    but the routing and ruling rows): the term's rate per genre (entries written for the genre that
    hold it, over the genre's entries; an entry for 全部 counts a share for every genre) and the
    normalized entropy of those rates, 1 for perfectly even. A term spread evenly (对话, 描写, 反派)
    is a craft word; a term concentrated in a few genres (丹田, 丧尸) is a genre word. Terms the
    routing table or the thesaurus uses as genre vocabulary are left out: never craft words.
    Built once per library and thesaurus version."""
    global _craft_cached
    index, profiles = index_get(), route_profiles_get()
    columns = list(conf("route_craft_columns"))
    key = (index.token, profiles.thesaurus, repr(columns))
    current = _craft_cached
    if current is not None and current.key == key:
        return current
    with _craft_lock:
        if _craft_cached is None or _craft_cached.key != key:
            _craft_cached = CraftVocabulary(key=key, words=craft_vocabulary_build(index.docs, profiles, columns))
        return _craft_cached


def craft_vocabulary_build(
    docs: list[Doc], profiles: RouteProfiles, columns: list[str]
) -> dict[str, tuple[float, int]]:
    """term -> (evenness, entries) over ``docs`` (see ``craft_vocabulary``)."""
    entries = [d for d in docs if ROUTE_NAME not in d.payload["fields"] and "冲突裁决" not in d.payload["fields"]]
    genres = sorted({g for d in entries for g in d.genres if g != "全部"})
    if len(genres) < 2:
        return {}
    position = {g: i for i, g in enumerate(genres)}
    total = [0.0] * len(genres)
    mass: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(genres))
    entry_count: dict[str, int] = defaultdict(int)
    for doc in entries:
        own = [g for g in doc.genres if g != "全部"]
        if not own or "全部" in doc.genres:
            share = [1 / len(genres)] * len(genres)
        else:
            share = [0.0] * len(genres)
            for g in own:
                share[position[g]] += 1 / len(own)
        total = [a + b for a, b in zip(total, share, strict=True)]
        p = doc.payload
        cells = {"关键词": p["keywords"], "意图与同义词": p["intents"], "分类": [p["category"]]}
        cells |= {"核心摘要": [p["summary"]], "详细展开": [p["detail"]], "大模型指令": [p["instruction"]]}
        terms = {
            t
            for column in columns
            for value in cells.get(column) or split_multi(p["fields"].get(column, ""))
            for t in profile_terms(value)
            if len(t) > 1
        }
        for term in terms:
            entry_count[term] += 1
            row = mass[term]
            for i, s in enumerate(share):
                row[i] += s
    # The routing table's own tags and the thesaurus's words name genres: never craft words.
    genre_words = set(profiles.words)
    for row in profiles.rows:
        for column in TAG_COLUMNS:
            genre_words.update(profile_terms(row.payload["fields"].get(column, "")))
    genre_words.update(t for row in profiles.rows for k in row.payload["keywords"] for t in profile_terms(k))
    words = {}
    for term, row in mass.items():
        if term in genre_words:
            continue
        rates = [m / t for m, t in zip(row, total, strict=True) if t]
        whole = sum(rates)
        entropy = -sum(r / whole * math.log(r / whole) for r in rates if r > 0)
        words[term] = (entropy / math.log(len(genres)), entry_count[term])
    return words


def _craft_terms(query: str, words: dict[str, tuple[float, int]]) -> list[str]:
    """The craft words of ``query`` (see ``craft_vocabulary``), in the order they appear."""
    evenness, min_entries = float(conf("route_craft_evenness")), int(conf("route_craft_min_entries"))
    return [
        t
        for t in profile_terms(query)
        if len(t) > 1 and (w := words.get(t)) is not None and w[0] >= evenness and w[1] >= min_entries
    ]


def _starts(text: str, term: str) -> list[int]:
    out, start = [], text.find(term)
    while start >= 0:
        out.append(start)
        start = text.find(term, start + 1)
    return out


def _craft_spans(query: str, craft: list[str]) -> list[tuple[int, int]]:
    text = query.lower()
    return [(i, i + len(term)) for term in craft for i in _starts(text, term)]


def _craft_skip(query: str, craft: list[str]) -> frozenset[str]:
    """The profile terms of ``query`` that lie on its craft words: the craft words themselves and
    their characters (where every occurrence is inside a craft word)."""
    text = query.lower()
    spans = _craft_spans(query, craft)
    skip = set(craft)
    for term in profile_terms(query):
        starts = _starts(text, term) if len(term) == 1 else []
        if starts and all(any(a <= i < b for a, b in spans) for i in starts):
            skip.add(term)
    return frozenset(skip)


def _craft_strip(query: str, craft: list[str]) -> str:
    """``query`` with its craft words blanked out."""
    blank = [False] * len(query)
    for a, b in _craft_spans(query, craft):
        blank[a:b] = [True] * (b - a)
    return "".join(" " if b else c for c, b in zip(query, blank, strict=True))


# A length in characters (三百字, 两千字, 3000字, 一万多字): how long a text is, not which genre.
_LENGTH = re.compile(r"[0-9０-９零〇一二三四五六七八九十两百千万几]+(?:多|来|余)?字")


def _lengths(query: str) -> list[str]:
    """The lengths in characters that ``query`` names, in order."""
    return [m.group() for m in _LENGTH.finditer(query)]


def _length_strip(query: str) -> str:
    """``query`` with its lengths blanked out (same length, so the craft words' spans still hold)."""
    return _LENGTH.sub(lambda m: " " * len(m.group()), query)


def _craft_share(query: str, craft: list[str]) -> float:
    """The share of the request's content characters (letters, digits, CJK; not the function
    characters 的、了 …) that lie on the craft words ``craft``."""
    text = query.lower()
    covered = [False] * len(text)
    for a, b in _craft_spans(query, craft):
        covered[a:b] = [True] * (b - a)
    content = [i for i, c in enumerate(text) if c.isalnum() and c not in FUNCTION_CHARS]
    return sum(covered[i] for i in content) / len(content) if content else 0.0


def _one_stretch(query: str, best: tuple[float, Doc, list[dict[str, Any]]]) -> str:
    """Why the genre left in a craft question rests on one two-character word of the request, or
    "": the words (two characters or more) of its evidence, a word inside another counted with it
    (反转 and its characters are one), must lie at two places of the request, or be one phrase of
    three characters or more (压着打: no accident). A word that names a genre's concept in the
    thesaurus (知乎, 宫斗) is the author naming the genre and stands alone."""
    _, doc, evidence = best
    text, names = query.lower(), route_profiles_get().names
    stretches: list[tuple[int, int]] = []
    for item in evidence:
        term = item["term"].lower()
        if len(term) < 2:
            continue
        if item["match"] == "thesaurus" and term in names:
            return ""
        for i in _starts(text, term):
            a, b = i, i + len(term)
            if not any(x <= a and b <= y for x, y in stretches):
                stretches = [(x, y) for x, y in stretches if not (a <= x and y <= b)] + [(a, b)]
    if len(stretches) >= 2 or (stretches and stretches[0][1] - stretches[0][0] > 2):
        return ""
    genre = doc.payload["fields"].get(ROUTE_NAME, "")
    word = query[stretches[0][0] : stretches[0][1]] if stretches else ""
    return f"题材画像（{genre}）只凭其余部分的一个两字词「{word}」，不足为据"


def _craft_fallback(query: str) -> str:
    """Why ``query`` is a craft question rather than a genre request, or "": it holds craft words,
    and without them (see ``_craft_skip``) and without the lengths it names (三千字: how long, which
    the thesaurus lists for the short-story styles) neither the genre profiles nor the routing
    keywords find a clear genre."""
    words, min_entries = craft_vocabulary().words, int(conf("route_craft_min_entries"))
    craft = _craft_terms(query, words)
    if not craft:
        return ""
    lengths = _lengths(query)
    query = _length_strip(query)
    skip = _craft_skip(query, craft)
    # What is left weighs by how concentrated the library holds it (in enough entries to judge):
    # a word it spreads fairly evenly (写一, 左右) is weak evidence of any one genre.
    concentration = {
        t: 1 - words[t][0]
        for t in profile_terms(query)
        if t not in skip and (w := words.get(t)) is not None and w[1] >= min_entries
    }
    ranked, why = _profile_hits(query, skip, scale=concentration, supported=False)
    if ranked:
        # A request that is mostly craft words and keeps only one two-character word for a genre
        # (怎么写反转才不显得突兀: 反转, which the thesaurus lists for 知乎短篇风) shares that word with
        # the genre by accident. The craft words the row keeps through the thesaurus (释放 for
        # 压抑后爆) are its evidence, not craft, here.
        kept = {e["term"] for e in ranked[0][2]}
        share = _craft_share(query, [t for t in craft if t not in kept])
        why = _one_stretch(query, ranked[0]) if share > 0.5 else ""
        if not why:
            return ""
    if _keyword_hits(_craft_strip(query, craft), _route_rows()):
        return ""
    shown = "、".join(f"「{t}」{words[t][0]:.2f}" for t in dict.fromkeys(craft))
    length = f"，「{'」「'.join(dict.fromkeys(lengths))}」是篇幅，不作为题材依据" if lengths else ""
    return (
        f"查询没有点名任何题材，是写法问题：{shown} 是各题材通用的写法词（参考库里均匀分布于各题材，"
        f"数字为分布均匀度）{length}，除去它们后{why}"
    )


def genre_route(*, query: str, genre: str | None = None) -> dict[str, Any]:
    """The route for ``query``: explicit genre wins; else keyword hits naming a genre (题材/流派,
    题材别名); else the genre profile (every routing column plus the keyword columns of the entries
    written for the genre, BM25 with IDF over the genres) when its best row is clear; else the weaker
    keyword hits (默认查询词, canonical_genre); else the closest genre by fuzzy matching; else the
    generic route, with the reason. Every non-generic route carries its evidence. What the query
    negates (不要虐, 别太甜) is left out of every step."""
    profiles = route_profiles_get()
    query, negated = negation_strip((query or "").strip(), profiles.names, profiles.guarded)
    query = query.strip()
    genre = (genre or "").strip()
    rows = _route_rows()
    method, ranked, reason = "generic", [], ""
    if genre:
        ranked = _rank(_explicit_hits(genre, query, rows))
        if not ranked:
            ranked = _rank(_fuzzy_hits(genre, rows))
        method = "explicit"
        if not ranked:
            reason = f"题材「{genre}」不在路由表中，也没有相近的题材"
    if not ranked and query:
        keyword = _rank(_keyword_hits(query, rows))
        strong = [e["term"] for e in keyword[0][2] if e["field"] in STRONG_FIELDS] if keyword else []
        ranked, why = [], ""
        if strong and max(map(len, strong)) < 3:
            # A two-character alias (魔法 in 魔法学院, 修仙 in 修仙世界的虐恋) is one word of the
            # request among others: the profile, which holds it too, weighs it against the rest.
            ranked, why = _profile_hits(query)
            method = "profile"
        if strong and not ranked:
            ranked, method = keyword, "keyword"
        elif not strong:
            ranked, why = _profile_hits(query)
            method = "profile"
            if not ranked and keyword:
                ranked, method = keyword, "keyword"
            if not ranked:
                ranked, method = _rank(_fuzzy_hits(query, rows)), "fuzzy"
            # A genre found only through craft words (打斗 shared with 斗法) is no genre.
            craft = _craft_fallback(query) if ranked else ""
            if craft:
                ranked, reason = [], f"{reason}；{craft}" if reason else craft
            elif not ranked:
                why = f"查询没有点名任何题材（名称、别名、默认查询词都未命中，也没有相近的写法）；{why}"
                if negated:
                    why += f"；否定的词不作为题材依据：{'、'.join(negated)}"
                reason = f"{reason}；{why}" if reason else why
    if not ranked:
        if negated and not any(c.isalnum() and c not in FUNCTION_CHARS for c in query):
            explicit = reason.split("；查询没有点名任何题材")[0] if genre else ""
            reason = f"{explicit}；" if explicit else ""
            reason += f"查询只有否定的词（{'、'.join(negated)}），没有点名任何题材"
        return {
            "method": "generic",
            "reason": reason or "没有查询词也没有题材",
            "genre": genre or GENERIC,
            "canonical_genre": genre or GENERIC,
            "primary": None,
            "candidates": [],
            "base_tables": list(conf("generic_base_tables")),
            "dynamic_tables": list(conf("generic_dynamic_tables")),
            "default_query_terms": [],
            "required_payoffs": [],
            "genre_filter": [genre] if genre else [],
            "weight": 1.0,
            "ruling": None,
        }
    _, top, _ = ranked[0]
    fields = top.payload["fields"]
    genre_filter = [fields.get(ROUTE_NAME, "").strip(), fields.get("canonical_genre", "").strip()]
    genre_filter += top.payload["genres"]
    if genre:
        genre_filter.append(genre)
    genre_filter = [g for g in dict.fromkeys(genre_filter) if g and g != "全部"]
    route = {
        "method": method,
        "genre": fields.get(ROUTE_NAME, "").strip(),
        "canonical_genre": fields.get("canonical_genre", "").strip() or fields.get(ROUTE_NAME, "").strip(),
        "primary": _candidate(top, ranked[0][0], ranked[0][2]),
        "candidates": [_candidate(doc, score, ev) for score, doc, ev in ranked[1:6]],
        "base_tables": split_multi(fields.get("推荐基础检索表", "")) or list(conf("generic_base_tables")),
        "dynamic_tables": split_multi(fields.get("推荐动态检索表", "")) or list(conf("generic_dynamic_tables")),
        "default_query_terms": split_multi(fields.get("默认查询词", "")),
        "required_payoffs": split_multi(fields.get("必选爽点", "")),
        "genre_filter": genre_filter,
        "weight": _row_weight(top),
        "reason": None,
    }
    ruling = _ruling(route, query)
    route["ruling"] = _ruling_out(ruling) if ruling else None
    return route


RULING_COLUMNS = ("题材", "风格优先级", "爽点优先级", "节奏默认策略", "毒点权重", "冲突裁决", "contract注入层")


def _ruling(route: dict[str, Any], query: str) -> Doc | None:
    """The adjudication rule (a 裁决规则-style row: 题材 + 冲突裁决 columns) of the route's canonical
    genre; with several for one genre, the one whose 关键词 the query or the route name mentions."""
    genre = route["canonical_genre"]
    rows = [
        d
        for d in index_get().docs
        if "冲突裁决" in d.payload["fields"] and d.payload["fields"].get("题材", "").strip() == genre
    ]
    if not rows:
        return None
    text = f"{query} {route['genre']}"

    def mentions(doc: Doc) -> int:
        return sum(len(k) for k in doc.payload["keywords"] if k in text)

    return sorted(rows, key=lambda d: (-mentions(d), d.library != "seed", d.code))[0]


def _ruling_out(doc: Doc) -> dict[str, Any]:
    fields = doc.payload["fields"]
    return {
        "code": doc.code,
        "table": doc.table,
        "library": doc.library,
        **{c: fields[c] for c in RULING_COLUMNS if c in fields},
    }
