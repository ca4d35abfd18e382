"""The routing engine of the story system: which genre route a query takes, and the StorySystemDict
it builds from the reference library — master constraints, base and dynamic context, anti-patterns,
the override policy — plus what a chapter query adds and how a chapter's values merge with the
master's under that policy.

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

from django.utils import timezone

from core.models import Book
from kernel.exceptions import InvalidInput
from storysystem.conf import LIST_FIELDS, MASTER_FIELDS, SETTING_FIELDS, anti_pattern_fields, conf
from storysystem.search import (
    FUNCTION_CHARS,
    TAG_COLUMNS,
    THESAURUS_FIELD,
    Doc,
    RouteProfiles,
    index_get,
    index_pinned,
    negation_strip,
    profile_terms,
    route_profiles_get,
    split_multi,
)

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


def _key(item: dict[str, Any]) -> tuple[str, str, str]:
    return (item["library"], item["table"], item["code"])


# ---------------------------------------------------------------- StorySystemDict


def _context_item(doc: Doc, score: float) -> dict[str, Any]:
    p = doc.payload
    return {
        "table": p["table"],
        "code": p["code"],
        "library": p["library"],
        "score": round(score, 4),
        "category": p["category"],
        "summary": p["summary"],
        "instruction": p["instruction"],
        "detail": p["detail"],
        "fields": p["fields"],
    }


def _context(
    route: dict[str, Any], query: str, tables: list[str], top_k: int, exclude: list[dict] | None = None
) -> tuple[list[dict], list[dict]]:
    """Top ``top_k`` of each table for the query expanded with the route's default terms; a table
    with no genre-matching hit falls back to the whole table (recorded in the trace). Entries in
    ``exclude`` (the base context) are not repeated in the dynamic context."""
    index = index_get()
    taken = {(i["library"], i["table"], i["code"]) for i in exclude or []}
    search_text = " ".join([query, route["genre"] if route["primary"] else "", *route["default_query_terms"]])
    items, trace = [], []
    for table in tables:

        def fresh(hits: list) -> list:
            return [h for h in hits if (h[0].library, h[0].table, h[0].code) not in taken][:top_k]

        wide = top_k + len(taken)
        _, hits = index.search(search_text, table=table, genres=route["genre_filter"] or None, max_results=wide)
        hits = fresh(hits)
        genre_filtered = True
        if not hits and route["genre_filter"]:
            _, hits = index.search(search_text, table=table, max_results=wide)
            hits = fresh(hits)
            genre_filtered = False
        fallback = not hits
        if fallback:
            # Nothing in the table shares a term with the query: the table still contributes its
            # first entries written for this genre (score 0), so a base table is never silent.
            hits = fresh([(doc, 0.0, []) for doc in index.genre_docs(table=table, genres=route["genre_filter"])])
        for doc, score, _ in hits:
            items.append(_context_item(doc, score))
        trace.append(
            {
                "table": table,
                "codes": [d.code for d, _, _ in hits],
                "genre_filtered": genre_filtered,
                "fallback": fallback,
            }
        )
    return items, trace


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


def _row_payload(route: dict[str, Any]) -> dict[str, Any] | None:
    if not route["primary"]:
        return None
    p = route["primary"]
    doc = index_get().doc_by_key.get((p["library"], p["table"], p["code"]))
    return doc.payload if doc else None


def _master_constraints(
    row: dict[str, Any] | None, base: list[dict], dynamic: list[dict], overrides: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    fields = row["fields"] if row else {}
    anti = row["anti_pattern_cells"] if row else {}
    values: dict[str, Any] = {}
    trace: list[dict[str, Any]] = []

    def from_row(name: str, cells: dict[str, str]) -> bool:
        cell = cells.get(name, "")
        if not cell.strip():
            return False
        values[name] = split_multi(cell) if name in LIST_FIELDS else cell.strip()
        trace.append({"kind": "constraint", "field": name, "source_code": row["code"], "source_table": row["table"]})
        return True

    for name in MASTER_FIELDS:
        values[name] = [] if name in LIST_FIELDS else ""
        if name == "全局毒点":
            for column in anti_pattern_fields():
                if anti.get(column, "").strip():
                    values[name] = split_multi(anti[column])
                    trace.append(
                        {"kind": "constraint", "field": name, "source_code": row["code"], "source_table": row["table"]}
                    )
                    break
            continue
        if from_row(name, fields):
            continue
        for table, column in conf("constraint_sources").get(name, []):
            for item in [*base, *dynamic]:
                cell = item["fields"].get(column, "").strip() if item["table"] == table else ""
                if cell:
                    values[name] = values[name] + [cell] if name in LIST_FIELDS else cell
                    trace.append(
                        {"kind": "constraint", "field": name, "source_code": item["code"], "source_table": table}
                    )
        if name == "主冲突模板" and not values[name] and row:
            for item in dynamic:
                f = item["fields"]
                if "桥段名称" in f and f.get("前置铺垫"):
                    setup, payoff = f["前置铺垫"].replace("|", "、"), f.get("核心爽点", "").replace("|", "、")
                    values[name] = f"{f['桥段名称']}：{setup} → {payoff}".rstrip(" →")
                    trace.append(
                        {
                            "kind": "constraint",
                            "field": name,
                            "source_code": item["code"],
                            "source_table": item["table"],
                        }
                    )
                    break
    for name, value in overrides.items():
        values[name] = value
        trace.append({"kind": "constraint", "field": name, "source_code": AUTHOR, "source_table": AUTHOR})
    return values, trace


def anti_patterns_merge(*groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The de-duplicated union (by text) of anti-pattern lists, first source kept, order kept."""
    seen: set[str] = set()
    merged = []
    for group in groups:
        for item in group:
            key = item["text"].strip().casefold()
            if key and key not in seen:
                seen.add(key)
                merged.append(item)
    return merged


def _author_items(texts: list[str], origin: str | None = None) -> list[dict[str, Any]]:
    items = []
    for text in texts:
        item = {"text": text, "source_table": AUTHOR, "source_code": AUTHOR, "field": "作者追加"}
        if origin:
            item["origin"] = origin
        items.append(item)
    return items


def override_policy_for(*, book: Book | None) -> dict[str, list[str]]:
    """The override policy: the configured default, replaced per list by ``story_system.override_policy``
    in the book's book.yaml. A master field listed nowhere is treated as locked (the safe side)."""
    policy = {k: list(v) for k, v in conf("override_policy").items()}
    custom = ((book.config or {}).get("story_system") or {}).get("override_policy") if book else None
    if isinstance(custom, dict):
        for key in ("locked", "append_only", "override_allowed"):
            if isinstance(custom.get(key), list):
                policy[key] = [str(v) for v in custom[key]]
    listed = {f for fields in policy.values() for f in fields}
    policy["locked"] += [f for f in SETTING_FIELDS if f not in listed]
    return policy


def overrides_clean(*, overrides: dict[str, Any] | None) -> dict[str, Any]:
    """Author-given field values, checked against the setting fields (ours and seed 003 §10.4's);
    list fields accept ``a|b``."""
    clean: dict[str, Any] = {}
    for name, value in (overrides or {}).items():
        if name not in SETTING_FIELDS:
            raise InvalidInput(
                f"未知的设定字段「{name}」，可用字段：{'、'.join(SETTING_FIELDS)}",
                extra={"field": name, "available": list(SETTING_FIELDS)},
            )
        if name in LIST_FIELDS:
            clean[name] = (
                split_multi(value) if isinstance(value, str) else [str(v).strip() for v in value if str(v).strip()]
            )
        else:
            clean[name] = value.strip() if isinstance(value, str) else "|".join(str(v) for v in value)
    return clean


def story_system_build(
    *,
    query: str,
    genre: str | None = None,
    book: Book | None = None,
    overrides: dict[str, Any] | None = None,
    add_anti_patterns: list[str] | None = None,
) -> dict[str, Any]:
    """The master StorySystemDict for ``query`` (JSON is the source; Markdown is a projection)."""
    with index_pinned():
        return _story_system_build(
            query=query, genre=genre, book=book, overrides=overrides, add_anti_patterns=add_anti_patterns
        )


def _story_system_build(
    *,
    query: str,
    genre: str | None,
    book: Book | None,
    overrides: dict[str, Any] | None,
    add_anti_patterns: list[str] | None,
) -> dict[str, Any]:
    query = (query or "").strip()
    if not query and not genre:
        raise InvalidInput("需要查询词或题材（--genre）", extra={"field": "query"})
    overrides = overrides_clean(overrides=overrides)
    route = genre_route(query=query, genre=genre)
    if route["primary"] is None and not genre and book is not None and book.genre.strip():
        # The query routes nowhere: the book's own genre (book.yaml) beats the generic route.
        by_book = genre_route(query=query, genre=book.genre)
        if by_book["primary"] is not None:
            route = {**by_book, "method": "book_genre"}
    base, base_trace = _context(route, query, route["base_tables"], int(conf("base_top_k")))
    dynamic, dynamic_trace = _context(route, query, route["dynamic_tables"], int(conf("dynamic_top_k")), base)
    row = _row_payload(route)
    ruling = index_get().doc_by_key.get(_key(route["ruling"])) if route["ruling"] else None
    constraints, constraint_trace = _master_constraints(row, base, dynamic, overrides)
    author_anti = [
        *(t for name in ("全局毒点", "全局禁区补充") if name in overrides for t in constraints[name]),
        *(add_anti_patterns or []),
    ]
    anti = anti_patterns_merge(
        anti_patterns_of(row) if row else [],
        anti_patterns_of(ruling.payload) if ruling else [],
        *[anti_patterns_of(_payload_of(item)) for item in [*base, *dynamic]],
        _author_items(author_anti),
    )
    trace = []
    if route["primary"]:
        trace.append({"kind": "route", **{k: route["primary"][k] for k in ("code", "table", "library", "score")}})
    if ruling:
        trace.append(
            {"kind": "ruling", "code": ruling.code, "table": ruling.table, "library": ruling.library, "score": 0.0}
        )
    for c in route["candidates"]:
        trace.append({"kind": "candidate", **{k: c[k] for k in ("code", "table", "library", "score")}})
    for kind, items in (("base", base), ("dynamic", dynamic)):
        for item in items:
            trace.append({"kind": kind, **{k: item[k] for k in ("code", "table", "library", "score")}})
    trace += [{"kind": "table", "role": "base", **t} for t in base_trace]
    trace += [{"kind": "table", "role": "dynamic", **t} for t in dynamic_trace]
    trace += constraint_trace
    return {
        "meta": {
            "query": query,
            "explicit_genre": genre or None,
            "inferred_genre": route["genre"],
            "chapter_mode": "master",
            "chapter": None,
            "book": book.slug if book else None,
            "generated_at": timezone.now().isoformat(timespec="seconds"),
            "library_version": index_get().token[:32],
        },
        "route": route,
        "master_constraints": constraints,
        "base_context": base,
        "dynamic_context": dynamic,
        "anti_patterns": anti,
        "override_policy": override_policy_for(book=book),
        "source_trace": trace,
    }


def _payload_of(item: dict[str, Any]) -> dict[str, Any]:
    doc = index_get().doc_by_key.get((item["library"], item["table"], item["code"]))
    return doc.payload if doc else {"anti_patterns": [], "table": item["table"], "code": item["code"]}


# ---------------------------------------------------------------- the merge of a chapter with the master


def _fields_present(*values: dict[str, Any]) -> list[str]:
    # The master constraints always; a seed field once the master or the chapter gives it.
    return [n for n in SETTING_FIELDS if n in MASTER_FIELDS or any(v.get(n) not in (None, "", []) for v in values)]


def effective_merge(
    *, master: dict[str, Any], contributions: dict[str, Any] | None, policy: dict[str, list[str]]
) -> dict[str, Any]:
    """Apply the override rules: locked from the master only; append_only the de-duplicated union;
    override_allowed the chapter's value when it has one. Anti-patterns are master ∪ chapter."""
    contributions = contributions or {}
    chapter_fields = contributions.get("fields", {})
    fields: dict[str, dict[str, Any]] = {}
    for name in _fields_present(master["master_constraints"], chapter_fields):
        mv = master["master_constraints"].get(name, [] if name in LIST_FIELDS else "")
        cv = chapter_fields.get(name)
        if name in policy["append_only"]:
            added = [v for v in (cv or []) if v not in mv] if name in LIST_FIELDS else []
            value = [*mv, *added] if name in LIST_FIELDS else mv
            fields[name] = {"value": value, "origin": "master+chapter" if added else "master", "policy": "append_only"}
            if added:
                fields[name]["added_by_chapter"] = added
        elif name in policy["override_allowed"] and cv not in (None, "", []):
            fields[name] = {"value": cv, "origin": "chapter", "policy": "override_allowed", "master_value": mv}
        else:
            policy_name = "override_allowed" if name in policy["override_allowed"] else "locked"
            fields[name] = {"value": mv, "origin": "master", "policy": policy_name}
    master_anti = [{**a, "origin": "master"} for a in master["anti_patterns"]]
    chapter_anti = [{**a, "origin": "chapter"} for a in contributions.get("anti_patterns", [])]
    return {"fields": fields, "anti_patterns": anti_patterns_merge(master_anti, chapter_anti)}


def chapter_contributions(
    *,
    master: dict[str, Any],
    policy: dict[str, list[str]],
    query: str,
    genre: str | None,
    explicit: dict[str, Any],
    add_anti_patterns: list[str] | None,
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """What a chapter query adds on top of the master: its own route (or the master's when the
    query routes nowhere), its dynamic context, field values and anti-patterns. Values its route
    suggests for locked fields are not attempts: they are kept under ``ignored_locked``."""
    with index_pinned():
        return _chapter_contributions(
            master=master,
            policy=policy,
            query=query,
            genre=genre,
            explicit=explicit,
            add_anti_patterns=add_anti_patterns,
        )


def _chapter_contributions(
    *,
    master: dict[str, Any],
    policy: dict[str, list[str]],
    query: str,
    genre: str | None,
    explicit: dict[str, Any],
    add_anti_patterns: list[str] | None,
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    route = genre_route(query=query, genre=genre)
    own_route = route["primary"] is not None and (
        master["route"]["primary"] is None or route["primary"]["code"] != master["route"]["primary"]["code"]
    )
    if route["primary"] is None and master["route"]["primary"] is not None:
        route = {**master["route"], "method": "inherited", "candidates": []}
    route["inherited_from_master"] = route["method"] == "inherited"
    dynamic, dynamic_trace = _context(
        route, query, route["dynamic_tables"], int(conf("dynamic_top_k")), master["base_context"]
    )
    row = _row_payload(route) if own_route else None
    derived, _ = _master_constraints(row, [], [], {})
    fields: dict[str, Any] = {}
    ignored: dict[str, Any] = {}
    for name in SETTING_FIELDS:
        mv = master["master_constraints"].get(name)
        if name in explicit:
            value = explicit[name]
        elif derived.get(name) not in (None, "", []) and derived[name] != mv:
            value = derived[name]
        else:
            continue
        if name in policy["locked"]:
            if value != mv:
                ignored[name] = value
            continue
        fields[name] = value
    ruling = index_get().doc_by_key.get(_key(route["ruling"])) if own_route and route.get("ruling") else None
    anti = anti_patterns_merge(
        anti_patterns_of(row) if row else [],
        anti_patterns_of(ruling.payload) if ruling else [],
        *[anti_patterns_of(_payload_of(item)) for item in dynamic],
        _author_items([*explicit.get("全局毒点", []), *explicit.get("全局禁区补充", []), *(add_anti_patterns or [])]),
    )
    trace = []
    if own_route:
        trace.append({"kind": "route", **{k: route["primary"][k] for k in ("code", "table", "library", "score")}})
    for item in dynamic:
        trace.append({"kind": "dynamic", **{k: item[k] for k in ("code", "table", "library", "score")}})
    trace += [{"kind": "table", "role": "dynamic", **t} for t in dynamic_trace]
    contributions = {
        "fields": fields,
        "explicit": explicit,
        "anti_patterns": anti,
        "dynamic_context": dynamic,
        "ignored_locked": ignored,
    }
    return contributions, route, trace


def chapter_compose(
    *, book: Book, chapter: int, master: dict[str, Any], record: dict[str, Any], policy: dict[str, list[str]]
) -> dict[str, Any]:
    """The chapter's StorySystemDict: the chapter's meta and route, the effective constraints and
    anti-patterns (with origins), the master's base context and the chapter's dynamic context."""
    contributions = record.get("contributions", {})
    merged = effective_merge(master=master, contributions=contributions, policy=policy)
    meta = record["meta"]
    master_trace = [
        {
            "kind": "master",
            "code": t["code"],
            "table": t["table"],
            "library": t.get("library", ""),
            "score": t.get("score", ""),
        }
        for t in master["source_trace"]
        if t["kind"] in ("route", "base")
    ]
    return {
        "meta": {
            "query": meta["query"],
            "explicit_genre": meta.get("explicit_genre"),
            "inferred_genre": meta.get("inferred_genre"),
            "chapter_mode": "chapter",
            "chapter": chapter,
            "book": book.slug,
            "generated_at": meta.get("generated_at"),
            "library_version": master["meta"].get("library_version"),
        },
        "route": record["route"],
        "master_constraints": {name: f["value"] for name, f in merged["fields"].items()},
        "field_origins": {name: f["origin"] for name, f in merged["fields"].items()},
        "base_context": master["base_context"],
        "dynamic_context": contributions.get("dynamic_context") or master["dynamic_context"],
        "anti_patterns": merged["anti_patterns"],
        "override_policy": policy,
        "chapter_overrides": {
            "explicit": contributions.get("explicit", {}),
            "fields": contributions.get("fields", {}),
            "ignored_locked": contributions.get("ignored_locked", {}),
        },
        "source_trace": [*master_trace, *record.get("source_trace", [])],
    }
