"""The helpers of the grouping signals: what the raw text shows with the names found (self-names,
X乃Y, appositions), company profiles, a silent companion of the party, places and factions, samples."""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from entities.discovery.collect import _Groups, _share, _Stats
from entities.discovery.vocab import (
    _ATTRIBUTION,
    _CLAUSE_END,
    _HAN,
    _QUOTE,
    _SELF_NAMED,
    COPULA,
    COPULA_NOT_SAME,
    PERSON_TAGS,
    SELF_WORDS,
    VOCATIVE_END,
    Proposal,
)


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


AGENCY_WEIGHT = 1.0


def _voice(p: Proposal) -> float:
    """How much a group behaves like a person: heard speaking, or introduced by a naming pattern
    (名唤红孩儿，号圣婴大王) — a narrator names people, not things."""
    if "party_pct" in p.signals:
        return 1.0  # travels with the protagonists: acts as one of them (_party_join)
    # Heard speaking, or (at most AGENCY_WEIGHT of it) the subject of the narration while tagged a name
    # (textstats.agency × person-tag share): a warrior who fights more than he talks.
    speech = min(1.0, p.signals["speaker"] / max(1.0, 0.05 * p.count))
    voice = 0.1 + 0.9 * max(speech, AGENCY_WEIGHT * p.signals.get("agency_pct", 0) / 100)
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
