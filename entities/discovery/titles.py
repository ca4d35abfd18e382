"""A title or a nickname joined to its person: 韩医生 / 陆先生 / 秦姨 / 老孟 (a surname + a title, a kinship
word, or 老 / 小 before it) and 九爷 / 阿福 (one character of a given name + a kinship word, or 阿 / 小 / 老
before it) name the one person of the book whose full name they share that character with.

Precision first: the join is made only when exactly one group of the book holds a full name with that
surname (or that given-name character), and it is a weak link (two names that meet in one sentence stay
two people: 宋太公 beside 宋江 is his father). Two candidates or more: nothing is joined (沈叔 in a family of
沈 names no one). Signals are the book's own (its person words, who meets whom) and the language's closed
classes (surnames, honorifics, kinship words); nothing names a character of any novel.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from entities.discovery.collect import _Groups, _share, _Stats
from entities.discovery.vocab import HONORIFICS, PERSON_TAGS

# Kinship words and forms of address written after a surname or after one character of a given name
# (陆哥, 秦姨, 九爷, 慧哥儿 …): a closed class of the language, like the surnames.
KIN_AFTER = frozenset("哥姐叔姨伯爷婶嫂妈姑舅婆奶娘")
# Written before a surname or a given-name character (老孟, 小陆, 阿福).
KIN_BEFORE = frozenset("老小阿")
# A title of two or more characters is a noun of the segmenter's dictionary at least this frequent
# (医生, 先生, 掌柜, 老爷子); a given name seldom is (冬青: 45), and one that is stays a given name when a
# full name of the book has it (groups.given).
TITLE_FREQ = 150
TITLE_TAGS = frozenset({"n", "b", "nr", "nz"})
# Share of a title form's chapters that also hold the full name it is joined to.
OVERLAP = 0.5
# A character of these classes (里, 的, 个 …) is no part of a given name a nickname would be made of.
FUNCTION_TAGS = frozenset("pfucdyerq")


def _is_title(rest: str, *, lexicon: Mapping[str, int], tags: Mapping[str, str], given: set[str], after: int) -> bool:
    """``rest`` after a surname is a title: an honorific, a kinship word, a common noun of the dictionary,
    or written after two or more surnames in the book (``after``) — never the given name of another full
    name (``given``: the full names holding ``rest`` as their given name)."""
    if given:
        return False
    if len(rest) == 1:
        return rest in KIN_AFTER
    if rest in HONORIFICS or after >= 2:
        return True
    return lexicon.get(rest, 0) >= TITLE_FREQ and tags.get(rest, "") in TITLE_TAGS


def full_names(st: _Stats, person: set[str], surnames: set[str], groups: _Groups, titled: set[str]) -> dict[str, str]:
    """The book's full names (a surname + a one- or two-character given name, tagged a person or already a
    given name's holder) → their group's root; forms with a title are none."""
    out: dict[str, str] = {}
    inside = {w[i:j] for w in person if len(w) >= 3 for i in range(1, len(w) - 1) for j in range(i + 2, len(w) + 1)}
    for w in person:
        if len(w) not in (2, 3) or w[0] not in surnames or w in titled or w[1] in KIN_AFTER:
            continue
        if w in inside:
            continue  # the tail of a longer name (顾行 of 张顾行): no full name of its own
        if w in groups.given or w in groups.given1 or _share(st.tag[w], PERSON_TAGS) >= 0.5:
            out[w] = groups.find(w)
    return out


def titles_join(
    st: _Stats,
    *,
    person: set[str],
    groups: _Groups,
    surnames: set[str],
    lexicon: Mapping[str, int],
    tags: Mapping[str, str],
    min_count: int,
) -> list[tuple[str, str]]:
    """Join each title / nickname form to the one group its surname or given-name character points at;
    returns the joins made (form, full name)."""
    count = st.count
    holders: dict[str, set[str]] = defaultdict(set)  # a given name → the full names holding it
    for full_name, g in groups.given.items():
        holders[g].add(full_name)
    # How many different surnames each tail follows among the person words (韩医生, 杜医生 → 医生: 2).
    tail_heads: dict[str, set[str]] = defaultdict(set)
    for w in person:
        if len(w) >= 3 and w[0] in surnames:
            tail_heads[w[1:]].add(w[0])

    def surname_form(w: str) -> str | None:
        if len(w) == 2 and w[0] in KIN_BEFORE and w[1] in surnames:
            return w[1]  # 老孟, 小陆
        rest = w[1:]
        if w[0] in surnames and _is_title(
            rest, lexicon=lexicon, tags=tags, given=holders.get(rest, set()) - {w}, after=len(tail_heads.get(rest, ()))
        ):
            return w[0]  # 韩医生, 秦姨, 周老爷子
        return None

    titled = {w for w in person if surname_form(w)}
    for w in titled:
        # A title read as a given name (掌柜 of 钱掌柜) would keep its form from its person (two_given).
        groups.given.pop(w, None)
        groups.given1.pop(w, None)
    full = full_names(st, person, surnames, groups, titled)
    by_surname: dict[str, set[str]] = defaultdict(set)
    by_char: dict[str, set[str]] = defaultdict(set)
    for name, root in full.items():
        if count[name] >= min_count:
            by_surname[name[0]].add(root)
            if _share(st.tag[name], PERSON_TAGS) >= 0.5:  # a nickname points only at a name the segmenter knows
                for c in name[1:]:
                    if tags.get(c, "") not in FUNCTION_TAGS:
                        by_char[c].add(root)
    joined: list[tuple[str, str]] = []
    for w in sorted(person, key=lambda x: (-count[x], x)):
        if w in full or count[w] < min_count:
            continue
        root = groups.find(w)
        members = groups.members.get(root, {w})
        if any(m in full for m in members):
            continue  # already with a full name
        c = surname_form(w)
        if c is not None:
            pool, why = by_surname.get(c, set()), f"姓「{c}」+ 称呼（书中姓「{c}」的全名只此一人）"
        elif len(w) == 2 and w[1] in KIN_AFTER and w[0] not in surnames:
            pool, why = by_char.get(w[0], set()), f"「{w[0]}」+「{w[1]}」（书中名字带「{w[0]}」的只此一人）"
        elif len(w) == 2 and w[0] in KIN_BEFORE and w[0] != "老" and w[1] not in surnames:
            pool, why = by_char.get(w[1], set()), f"「{w[0]}」+「{w[1]}」（书中名字带「{w[1]}」的只此一人）"
        else:
            continue
        roots = {groups.find(r) for r in pool}
        if len(roots) != 1:
            continue  # no full name, or two people it could be: left apart
        owner = roots.pop()
        names = [n for n in full if groups.find(n) == owner]
        head = max(names, key=lambda n: (count[n], n))
        # The person a title names is there when it is used: most of the form's chapters hold the full
        # name too (罗真人 and the official 罗戬 of a hundred chapters later are two people).
        present = set().union(*(st.chapters[n] for n in names))
        if len(st.chapters[w] & present) < OVERLAP * len(st.chapters[w]):
            continue
        if groups.join(w, owner, why, weak=True):
            joined.append((w, head))
    return joined
