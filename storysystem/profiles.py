"""The genre profiles of the routing rows: one BM25 document per row of 题材与调性推理, made of the row's
own routing columns, the keyword columns of every library entry written for its genre and the words of
the thesaurus concepts mapped to it (storysystem/thesaurus.py). The routing engine (storysystem/routing.py)
scores a request against them; they are built on the first route of a library version, not with the
search index (a search never needs them).
"""

import re
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import ahocorasick

from kernel.bm25 import idf as bm25_idf
from kernel.bm25 import length_norm
from storysystem.conf import conf
from storysystem.search import (
    CJK,
    FUNCTION_CHARS,
    ROUTE_NAME,
    SPLIT,
    TAG_COLUMNS,
    WORD,
    Doc,
    index_get,
    split_multi,
    tokenize,
)
from storysystem.thesaurus import (
    NEGATION,
    THESAURUS_FIELD,
    concept_rows,
    occurrences,
    thesaurus_load,
    thesaurus_map,
    thesaurus_path,
    thesaurus_spans,
)

_lock = threading.Lock()

# A routing row's genre keys: entries of other tables written for one of these genres feed the
# row's profile.
_ROUTE_KEYS = (ROUTE_NAME, "canonical_genre", "题材别名")


@dataclass
class RouteProfiles:
    """One BM25 document per routing row: the row's own routing columns plus the keyword columns
    of every library entry written for the row's genre. IDF is over the routing rows, so a term
    every genre shares (写法, 主角) weighs nothing and a term one genre owns (入赘, 丧尸) weighs most."""

    rows: list[Doc]
    # term -> [(row index, contribution, field the contribution mostly came from)]
    postings: dict[str, list[tuple[int, float, str]]]
    # thesaurus word -> [(row index, contribution, concept, row column, row term)]: the words of the
    # concepts mapped to a row (see ``thesaurus_map``)
    words: dict[str, list[tuple[int, float, str, str, str]]] = field(default_factory=dict)
    thesaurus: tuple[str, float] = ("", 0.0)
    # the concepts' names among ``words`` (genre names: 虐文, 宫斗 …), and as (name, concept)
    names: frozenset[str] = frozenset()
    named: frozenset[tuple[str, str]] = frozenset()
    # ``words`` as one Aho–Corasick automaton (a route scans the request once, not 2,000 times),
    # and the words holding a negation cue themselves (不要回头: content, not a negation)
    automaton: Any = None
    # the two-character words the library or the thesaurus writes whole (``route_profiles_build``)
    lexicon: frozenset[str] = frozenset()
    guarded: tuple[str, ...] = ()

    def score(
        self, query: str, *, skip: frozenset[str] = frozenset(), scale: dict[str, float] | None = None
    ) -> list[tuple[float, int, list[dict[str, Any]]]]:
        """(score, row index, evidence) for every row sharing a term with ``query``, best first.
        A term in ``skip`` (a request's craft words) counts only for the rows whose profile holds
        it mostly through our thesaurus (释放 is 压抑后爆's own vocabulary, not a craft word there);
        a term in ``scale`` counts that share of its weight.

        Each stretch of the request is evidence once for a row: where a thesaurus word credits the
        row, the profile terms lying inside that word which the row holds through the thesaurus
        (its bigrams, its characters) add nothing more to that row — 我死后 is one clue, not
        我死后 + 我死 + 死后; the library's own columns are another witness and still count. A bigram
        straddling two words (``boundary_fragments``) is no evidence."""
        scores: dict[int, float] = defaultdict(float)
        evidence: dict[int, list[tuple[float, dict[str, Any]]]] = defaultdict(list)
        unigram = float(conf("route_profile_unigram_weight"))
        text = query.lower()
        # row index -> the spans of the request its thesaurus words cover
        covered: dict[int, list[tuple[int, int]]] = defaultdict(list)
        boost = float(conf("route_thesaurus_name_boost"))
        for word, spans in thesaurus_spans(query, self.automaton):
            # a genre's name followed by 文 / 流 / 风 / 类 / 题材 / 小说 names the book's genre (学院文)
            marked = any(_GENRE_MARKER.match(text, b) for _, b in spans)
            for row_idx, contribution, concept, column, row_term in self.words[word]:
                if marked and (word, concept) in self.named:
                    contribution *= boost
                covered[row_idx] += spans
                scores[row_idx] += contribution
                evidence[row_idx].append(
                    (
                        contribution,
                        {"field": THESAURUS_FIELD, "term": word, "match": "thesaurus", "concept": concept}
                        | {"row_field": column, "row_term": row_term},
                    )
                )
        cut = self.boundary_fragments(text)
        for term in profile_terms(query):
            if term in cut:
                continue
            scale_of = (unigram if len(term) == 1 else 1.0) * (scale or {}).get(term, 1.0)
            starts: list[int] | None = None
            for row_idx, contribution, source in self.postings.get(term, ()):
                if term in skip and source != THESAURUS_FIELD:
                    continue
                spans = covered.get(row_idx) if source == THESAURUS_FIELD else None
                if spans:
                    if starts is None:
                        starts = list(occurrences(text, term))
                    if starts and all(any(a <= i and i + len(term) <= b for a, b in spans) for i in starts):
                        continue
                contribution *= scale_of
                scores[row_idx] += contribution
                evidence[row_idx].append((contribution, {"field": source, "term": term, "match": "profile"}))
        out = []
        for row_idx, total in scores.items():
            top = sorted(evidence[row_idx], key=lambda e: (-e[0], e[1]["term"]))[:8]
            out.append((total, row_idx, [{**e, "score": round(c, 3)} for c, e in top]))
        out.sort(key=lambda h: (-h[0], self.rows[h[1]].library != "seed", self.rows[h[1]].code))
        return out

    def boundary_fragments(self, text: str) -> frozenset[str]:
        """The bigrams of ``text`` that straddle a word boundary: no word themselves, and at every
        place they occur, a word of the lexicon ends on their first character or starts on their
        second (面改 in 位面改写, 统派 in 系统派她). They are no evidence."""
        lexicon = self.lexicon
        cut: dict[str, bool] = {}
        for run in WORD.findall(text):
            for i in range(len(run) - 1):
                bigram = run[i : i + 2]
                if bigram in lexicon:
                    continue
                straddles = run[i - 1 : i + 1] in lexicon if i else False
                straddles = straddles or run[i + 1 : i + 3] in lexicon
                cut[bigram] = cut.get(bigram, True) and straddles
        return frozenset(b for b, straddles in cut.items() if straddles)


_GENRE_MARKER = re.compile("文|流|风|类|题材|小说")


def profile_terms(text: str) -> list[str]:
    """The distinct terms of ``text`` for a genre profile: the search tokens without the bigrams
    holding a function character, plus, when ``route_profile_unigrams`` is on, single CJK
    characters."""
    terms = [t for t in tokenize(text) if len(t) != 2 or not (set(t) & FUNCTION_CHARS)]
    if conf("route_profile_unigrams"):
        terms += [c for c in text.lower() if CJK.match(c) and c not in FUNCTION_CHARS]
    return list(dict.fromkeys(terms))


def route_profiles_build(*, docs: list[Doc]) -> RouteProfiles:
    """The genre profiles of the routing rows among ``docs`` (see ``RouteProfiles``)."""
    weights: dict[str, float] = conf("route_profile_weights")
    library_weights: dict[str, float] = conf("route_profile_library_weights")
    k1, b = float(conf("route_profile_k1")), float(conf("route_profile_b"))
    rows = [d for d in docs if ROUTE_NAME in d.payload["fields"]]
    keys = []
    for row in rows:
        fields = row.payload["fields"]
        keys.append({v for name in _ROUTE_KEYS for v in split_multi(fields.get(name, "")) if v != "全部"})
    tf: list[dict[str, float]] = [defaultdict(float) for _ in rows]
    best: list[dict[str, tuple[float, str]]] = [{} for _ in rows]
    # Without a segmenter, a bigram of prose is as often a word boundary (改写|点) as a word: prose
    # columns contribute only the bigrams the library itself uses as a tag somewhere.
    vocabulary = {t for d in docs for cell in (*d.payload["keywords"], *d.payload["intents"]) for t in tokenize(cell)}
    for row in rows:
        for name in TAG_COLUMNS:
            vocabulary.update(tokenize(row.payload["fields"].get(name, "")))

    mapped = [(c, concept_rows(c, rows)) for c in thesaurus_load(thesaurus_path())]
    # The words the library and the thesaurus write whole (a tag, a segment of one, a thesaurus
    # word). A bigram of a thesaurus phrase that is none of them is a fragment spanning two words
    # (到十 of 回到十八岁): it is kept, so a near word still meets it, but weighs as a single
    # character does. At query time a bigram straddling a lexicon word is dropped (boundary_fragments).
    fragment = float(conf("route_profile_unigram_weight"))
    lexicon = {w for c, _ in mapped for w in c.words}
    for d in docs:
        for cell in (*d.payload["keywords"], *d.payload["intents"]):
            lexicon.update(seg for seg in SPLIT.split(cell.lower()) if seg)
    for row in rows:
        for name in TAG_COLUMNS:
            for cell in split_multi(row.payload["fields"].get(name, "")):
                lexicon.update(seg for seg in SPLIT.split(cell.lower()) if seg)

    def terms_of(text: str, source: str) -> list[str]:
        terms = profile_terms(text)
        if source.rsplit(".", 1)[-1] in TAG_COLUMNS or source == THESAURUS_FIELD:
            return terms
        return [t for t in terms if len(t) == 1 or t in vocabulary]

    def add(targets: list[int], terms: list[str], weight: float, source: str) -> None:
        for row_idx in targets:
            row_tf, row_best = tf[row_idx], best[row_idx]
            for term in terms:
                # only the thesaurus's phrases are cut into fragments weighed down here: the
                # library's own bigrams keep their weight (its tags are short, mostly one word)
                w = (
                    weight * fragment
                    if source == THESAURUS_FIELD and len(term) == 2 and term not in lexicon
                    else weight
                )
                row_tf[term] += w
                if w > row_best.get(term, (0.0, ""))[0]:
                    row_best[term] = (w, source)

    for row_idx, row in enumerate(rows):
        p = row.payload
        own = {**p["fields"], **p["anti_pattern_cells"], "关键词": "|".join(p["keywords"])}
        own |= {"意图与同义词": "|".join(p["intents"]), "核心摘要": p["summary"], "详细展开": p["detail"]}
        own["大模型指令"] = p["instruction"]
        for name, weight in weights.items():
            for value in split_multi(own.get(name, "")):
                add([row_idx], terms_of(value, name), weight, name)
    for doc in docs:
        if ROUTE_NAME in doc.payload["fields"]:
            continue
        genres = doc.genres - {"全部"}
        targets = [i for i, k in enumerate(keys) if k & genres]
        if not targets:
            continue
        p = doc.payload
        cells = {"关键词": p["keywords"], "意图与同义词": p["intents"], "核心摘要": [p["summary"]]}
        cells |= {"详细展开": [p["detail"]], "大模型指令": [p["instruction"]]}
        for name, weight in library_weights.items():
            source = f"{doc.table}.{name}"
            for value in cells.get(name) or split_multi(p["fields"].get(name, "")):
                add(targets, terms_of(value, name), weight, source)
    # Our thesaurus is vocabulary too: its words join the profile of the rows their concept maps
    # to, so a word it lacks still meets its characters and bigrams (仙途 meets 仙).
    thesaurus_weight = float(weights.get(THESAURUS_FIELD, 0.0))
    if thesaurus_weight:
        for concept, targets in mapped:
            for word in concept.words if targets else ():
                add(
                    [t[0] for t in targets],
                    terms_of(word, THESAURUS_FIELD),
                    thesaurus_weight / len(targets),
                    THESAURUS_FIELD,
                )
    n = len(rows)
    lengths = [sum(t.values()) for t in tf]
    avg = (sum(lengths) / n) if n else 1.0
    df: Counter[str] = Counter(term for t in tf for term in t)
    postings: dict[str, list[tuple[int, float, str]]] = defaultdict(list)
    for row_idx, terms in enumerate(tf):
        norm = length_norm(lengths[row_idx], avg or 1.0, b)
        for term, w in terms.items():
            idf = bm25_idf(n, df[term])
            postings[term].append((row_idx, idf * w * (k1 + 1) / (w + k1 * norm), best[row_idx][term][1]))
    names = frozenset(n.lower() for c, targets in mapped if targets for n in c.names)
    named = frozenset((n.lower(), c.names[0]) for c, targets in mapped if targets for n in c.names)
    words = thesaurus_map(mapped=mapped)
    automaton = ahocorasick.Automaton()
    for word in words:
        automaton.add_word(word, word)
    if words:
        automaton.make_automaton()
    return RouteProfiles(
        rows=rows,
        postings=dict(postings),
        words=words,
        names=names,
        named=named,
        automaton=automaton if words else None,
        lexicon=frozenset(t for t in lexicon if len(t) == 2),
        guarded=tuple(w for w in words if NEGATION.search(w)),
    )


def route_profiles_get() -> RouteProfiles:
    """The genre profiles of the current index (built once per library and thesaurus version)."""
    index = index_get()
    path = thesaurus_path()
    try:
        version = (str(path), path.stat().st_mtime)
    except OSError:
        version = (str(path), -1.0)  # thesaurus_load reports it
    if index.profiles is None or index.profiles.thesaurus != version:
        with _lock:
            if index.profiles is None or index.profiles.thesaurus != version:
                index.profiles = route_profiles_build(docs=index.docs)
                index.profiles.thesaurus = version
    return index.profiles
