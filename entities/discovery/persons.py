"""Who is a person and which names are one person: the grouping signals over the counts of one walk
(docs/discovery.md has the table with every threshold)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from entities.discovery.collect import _Groups, _share, _Stats
from entities.discovery.courtesy import courtesy_pairs
from entities.discovery.links import (
    _compound_add,
    _cosine,
    _given_names_recover,
    _group_count,
    _name_score,
    _named_count,
    _parts,
    _party_join,
    _profiles,
    _self_names_join,
    _sentence_pairs,
    _spread,
    _subsequence,
    _text_count_add,
    _text_links,
    _vocatives_join,
    _voice,
)
from entities.discovery.titles import titles_join
from entities.discovery.vocab import (
    _HAN,
    CLOSE_COMPANY,
    COMMON_WORD,
    HONORIFIC_CHARS,
    HONORIFICS,
    NOUNISH,
    OLD_SURNAME_HELD,
    ORG_TAGS,
    PERSON_TAGS,
    PLACE_SUFFIXES,
    PLACE_TAGS,
    SAME_COMPANY,
    SURNAMES,
    UNCERTAIN_CONFIDENCE,
    Proposal,
    ProposedAlias,
)


@dataclass
class _Cast:
    """What the grouping steps share: the counts, the person words, the groups and what they learned."""

    st: _Stats
    chapters: list[tuple[int, str]]
    min_count: int
    lexicon: Mapping[str, int]
    group_words: frozenset[str]
    agency: Mapping[str, float] = field(default_factory=dict)
    person: set[str] = field(default_factory=set)
    groups: _Groups | None = None
    links: object = None
    surnames: set[str] = field(default_factory=set)
    selfnames: set[str] = field(default_factory=set)
    starts: Counter[str] = field(default_factory=Counter)
    title_words: set[str] = field(default_factory=set)
    tags: Mapping[str, str] = field(default_factory=dict)


def _persons(
    st: _Stats,
    *,
    chapters: list[tuple[int, str]],
    min_count: int,
    limit: int,
    lexicon: Mapping[str, int],
    group_words: frozenset[str] = frozenset(),
    agency: Mapping[str, float] | None = None,
    tags: Mapping[str, str] | None = None,
) -> list[Proposal]:
    """The characters of the book: who is a person (``_person_words``, ``_titled_persons``), then which names
    are one person, step by step over one union-find (``_groups_start`` … ``_variant_join``), then one proposal
    per group (``_proposals_build``)."""
    cx = _Cast(st, chapters, min_count, lexicon, group_words, agency or {}, tags=tags or {})
    for step in (
        _person_words,
        _titled_persons,
        _groups_start,
        _nesting_join,
        _text_join,
        _courtesy_join,
        _surname_join,
        _anaphora_join,
        _family_join,
        _title_join,
        _variant_join,
    ):
        step(cx)
    return _proposals_build(cx, limit)


def _person_words(cx: _Cast) -> None:
    """Who is a person: the words tagged, heard speaking, pointed at or named (and the longer words holding one)."""
    st = cx.st
    count = cx.st.count
    group_words = cx.group_words
    min_count = cx.min_count
    chapters = cx.chapters
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
    cx.person = person


def _titled_persons(cx: _Cast) -> None:
    """Names written with a title (观音 + 菩萨), glued verbs dropped, and the book's surnames."""
    st = cx.st
    count = cx.st.count
    person = cx.person
    min_count = cx.min_count
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
    cx.title_words, cx.starts, cx.surnames = title_words, starts, surnames


def _groups_start(cx: _Cast) -> None:
    """The union-find of names, with who meets whom in one sentence (two people) and the first generic words."""
    st = cx.st
    count = cx.st.count
    person = cx.person
    min_count = cx.min_count
    chapters = cx.chapters
    surnames = cx.surnames
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

    cx.groups, cx.links = groups, links


def _nesting_join(cx: _Cast) -> None:
    """Nesting (悟空 ⊂ 孙悟空), appositions (如来佛祖) and naming patterns (名唤罗刹女)."""
    st = cx.st
    count = cx.st.count
    person = cx.person
    groups = cx.groups
    generic = cx.groups.generic
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


def _text_join(cx: _Cast) -> None:
    """What the raw text shows: self-names, X乃Y, calls read from the text, appositions jieba's tags hide."""
    st = cx.st
    count = cx.st.count
    groups = cx.groups
    generic = cx.groups.generic
    links = cx.links
    lexicon = cx.lexicon
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


def _courtesy_join(cx: _Cast) -> None:
    """A courtesy name introduced by 字 (刘备，字玄德 / 姓萧名承，字景略 / 韩烈者，字伯威 / 此人字子高, read by
    ``courtesy.courtesy_pairs``) is a name of the person it introduces. Said once in a book, so one sentence
    suffices; the groups' own guards (two people met in one sentence, two given names) still refuse a join."""
    said = courtesy_pairs(cx.chapters, cx.person)
    for (owner, name), n in sorted(said.items()):
        if name not in cx.groups.generic:
            cx.groups.join(name, owner, f"「{owner}，字{name}」（表字句式 {n} 次）")


def _surname_join(cx: _Cast) -> None:
    """Surnames: one surname with the same company, given names, 老 + surname."""
    st = cx.st
    count = cx.st.count
    person = cx.person
    groups = cx.groups
    min_count = cx.min_count
    lexicon = cx.lexicon
    surnames = cx.surnames
    starts = cx.starts
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
            why = f"同姓「{c}」且同场人物相近（相似度 {similarity:.2f}）"
            if similarity >= SAME_COMPANY or (similarity >= CLOSE_COMPANY and similarity >= 1.2 * runner_up):
                groups.join(b, a, why)

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

    cx.selfnames = selfnames


def _anaphora_join(cx: _Cast) -> None:
    """Anaphora: 那 / 这 + epithet votes for the name just before it, by lift."""
    st = cx.st
    person = cx.person
    groups = cx.groups
    generic = cx.groups.generic
    min_count = cx.min_count
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


def _family_join(cx: _Cast) -> None:
    """Forms of address answered, self-names, surname + a group's name or title."""
    st = cx.st
    count = cx.st.count
    person = cx.person
    groups = cx.groups
    links = cx.links
    min_count = cx.min_count
    chapters = cx.chapters
    surnames = cx.surnames
    selfnames = cx.selfnames
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


def _title_join(cx: _Cast) -> None:
    """A title or a nickname (韩医生, 老孟, 九爷) joins the one full name it can name (``titles``)."""
    titles_join(
        cx.st,
        person=cx.person,
        groups=cx.groups,
        surnames=cx.surnames,
        lexicon=cx.lexicon,
        tags=cx.tags,
        min_count=cx.min_count,
    )


def _variant_join(cx: _Cast) -> None:
    """Pinyin variants, name + title compounds, place + person, abbreviations."""
    st = cx.st
    count = cx.st.count
    person = cx.person
    groups = cx.groups
    generic = cx.groups.generic
    min_count = cx.min_count
    title_words = cx.title_words
    # Pinyin variants of a frequent name: never merged by sound alone (张翼 / 张仪 are two people), a
    # lower-band link for a curator (金刚 / 金钢 may be one name written two ways). pypinyin is imported here, not at the top: its dictionaries take
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
                    groups.maybe(other, names[0], f"与「{names[0]}」同音（拼音 {''.join(lazy_pinyin(other))}）")

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


def _proposals_build(cx: _Cast, limit: int) -> list[Proposal]:
    """One proposal per group, ordered by √count × confidence × voice."""
    st = cx.st
    count = cx.st.count
    person = cx.person
    groups = cx.groups
    generic = cx.groups.generic
    min_count = cx.min_count
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
        acts = sum(cx.agency.get(w, 0.0) * count[w] for w in names) / total
        confidence = round(min(0.99, 0.35 * nr + 0.35 * min(1.0, spk / max(1, 0.05 * total)) + 0.3 * _spread(chaps)), 2)
        # An uncertain link of one of its names to another group: the lower band, with the link as reason.
        link = next(
            (
                f"可能与「{owner}」是同一人：{why}"
                for w in sorted(names, key=lambda x: (-count[x], x))
                if (hit := groups.uncertain.get(w)) and groups.find(hit[0]) != groups.find(w)
                for owner, why in [hit]
            ),
            "",
        )
        if link:
            confidence = min(confidence, UNCERTAIN_CONFIDENCE)
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
                uncertain=link,
                signals={
                    "speaker": spk,
                    "person_tag_share_pct": round(100 * nr),
                    "agency_pct": round(100 * acts * nr),
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
