"""The 西游记 check: the novel imported with bookfiles.importers.txt, then the one-pass Aho–Corasick scan
checked against a plain substring scan and the gold alias file."""

import json
from collections import Counter, defaultdict

import pytest

from bookfiles.importers.txt import txt_parse
from core.models import Book, Chapter
from entities.mentions import alias_counts_all, matcher_get, mentions_index
from entities.models import AmbiguousMention, Appearance, Entity
from entities.services.writes import alias_add, entity_create
from tests.conftest import CORPUS

pytestmark = [pytest.mark.django_db, pytest.mark.corpus]

TEXT = CORPUS / "xiyouji.txt"
GOLD = CORPUS / "xiyouji_aliases.json"


@pytest.fixture(scope="module")
def corpus():
    if not TEXT.exists() or not GOLD.exists():
        pytest.skip(f"需要 {TEXT} 和 {GOLD}（../shared/corpus 不存在）")
    # Imported with the project's own pure importer (headings such as "《》目录 第一回　灵根育孕源流出…").
    book = txt_parse(TEXT.read_text(encoding="utf-8"))
    chapters = [(c.title, c.body) for c in sorted(book.chapters, key=lambda c: c.number)]
    assert [c.number for c in book.chapters] == list(range(1, 101))
    gold = json.loads(GOLD.read_text(encoding="utf-8"))["characters"]
    return chapters, gold


@pytest.fixture
def xiyouji(corpus):
    chapters, gold = corpus
    book = Book.objects.create(slug="xiyouji", title="西游记", root="/tmp/xiyouji")
    Chapter.objects.bulk_create(
        [Chapter(book=book, number=n, title=title, body=body) for n, (title, body) in enumerate(chapters, start=1)]
    )
    for character in gold:
        entity = entity_create(book=book, name=character["name"], type="角色", source="file")
        for alias in character["aliases"]:
            alias_add(entity=entity, alias=alias["alias"], source="file")
    mentions_index(book=book, numbers=None, removed=[])
    return book, chapters, gold


def _leftmost_longest(text: str, names: list[str]) -> Counter:
    """An independent, naive leftmost-longest scan (what the automaton must agree with)."""
    by_first: dict[str, list[str]] = defaultdict(list)
    for name in sorted(names, key=len, reverse=True):
        by_first[name[0]].append(name)
    counts: Counter = Counter()
    i = 0
    while i < len(text):
        for name in by_first.get(text[i], ()):
            if text.startswith(name, i):
                counts[name] += 1
                i += len(name)
                break
        else:
            i += 1
    return counts


def _shadowed(texts: list[str], names: list[str]) -> set[str]:
    """Names of which some occurrence overlaps an occurrence of another name that starts earlier or
    is longer — the only way leftmost-longest can take an occurrence away from a name."""
    out = set()
    for text in texts:
        spans = []
        for name in names:
            start = text.find(name)
            while start != -1:
                spans.append((start, start + len(name), name))
                start = text.find(name, start + 1)
        spans.sort()
        for i, (a, b, name) in enumerate(spans):
            for c, d, other in spans[i + 1 :]:
                if c >= b:
                    break
                # (a, b) starts first or at the same place and is at least as long: ``other`` loses.
                if other != name:
                    out.add(other if (a < c or b >= d) else name)
    return out


def test_chapters_and_plain_counts_match_the_gold_file(xiyouji):
    book, chapters, gold = xiyouji
    assert len(chapters) == 100
    matcher = matcher_get(book=book)
    totals: Counter = Counter()
    first: dict[str, int] = {}
    for n, (title, body) in enumerate(chapters, start=1):
        text = f"{title}\n{body}"
        counts = alias_counts_all(matcher=matcher, text=text)
        for name, count in counts.items():
            assert count == text.count(name), (n, name)
            totals[name] += count
            first.setdefault(name, n)
    for character in gold:
        for alias in character["aliases"]:
            assert (totals[alias["alias"]], first[alias["alias"]]) == (alias["count"], alias["first_chapter"]), alias


def test_unambiguous_aliases_without_nesting_match_a_plain_substring_scan_per_chapter(xiyouji):
    book, chapters, gold = xiyouji
    texts = [f"{t}\n{b}" for t, b in chapters]
    names = list(matcher_get(book=book).names)
    shadowed = _shadowed(texts, names)
    attributed: dict[str, Counter] = defaultdict(Counter)
    for row in Appearance.objects.filter(book=book, source="scan"):
        for alias, count in row.aliases.items():
            attributed[alias][row.chapter] += count
    checked = []
    for character in gold:
        for alias in character["aliases"]:
            name = alias["alias"]
            if alias["ambiguous"] or name in shadowed:
                continue
            plain = Counter({n: text.count(name) for n, text in enumerate(texts, start=1) if name in text})
            assert attributed[name] == plain, name
            assert min(attributed[name]) == alias["first_chapter"], name
            checked.append(name)
    # 58 of the 75 unambiguous aliases are never shadowed by a longer or earlier name: their per-chapter
    # counts are exactly the plain substring counts (the other 17 are covered by the nested test).
    assert len(checked) == 58
    assert sorted(a["alias"] for c in gold for a in c["aliases"] if not a["ambiguous"] and a["alias"] in shadowed) == [
        # Each is nested in a longer name (八戒 in 猪八戒 …) or overlapped by an earlier one
        # (观音菩萨 in 南海观音菩萨, where 南海观音 starts first).
        *["二郎", "八戒", "哪吒", "圣婴", "太宗", "如来", "御弟", "悟净", "悟空", "悟能"],
        *["牛魔王", "玄奘", "玉皇", "老君", "观世音", "观音", "观音菩萨"],
    ]
    assert {"孙悟空", "齐天大圣", "猪八戒", "沙僧", "唐僧", "玉帝"} <= set(checked)


def test_nested_aliases_follow_leftmost_longest(xiyouji):
    book, chapters, gold = xiyouji
    names = list(matcher_get(book=book).names)
    attributed: Counter = Counter()
    for row in Appearance.objects.filter(book=book, source="scan"):
        attributed.update(row.aliases)
    naive: Counter = Counter()
    for title, body in chapters:
        naive.update(_leftmost_longest(title + "\n" + body, names))
    assert attributed == naive
    # 悟空 occurs 512 times as a substring; 126 of them are inside 孙悟空, so 386 are 悟空 itself.
    assert (attributed["悟空"], attributed["孙悟空"]) == (386, 126)
    # 大圣: 1270 substrings = 964 own + 102 in 齐天大圣 + 202 in 孙大圣 + 2 in 平天大圣.
    assert (attributed["大圣"], attributed["齐天大圣"], attributed["孙大圣"], attributed["平天大圣"]) == (
        964,
        102,
        202,
        2,
    )
    wukong = Entity.objects.get(book=book, canonical_name="孙悟空")
    assert (wukong.entity_id, wukong.first_appearance, wukong.last_appearance) == ("sunwukong", 1, 100)


def test_an_alias_of_two_entities_is_reported_not_guessed(xiyouji):
    book, _, _ = xiyouji
    liuer = entity_create(book=book, name="六耳猕猴", type="角色", aliases=["猴王"], source="file")
    mentions_index(book=book, numbers=None, removed=[])
    ambiguous = AmbiguousMention.objects.filter(book=book, alias="猴王")
    assert sum(a.count for a in ambiguous) == 142
    assert ambiguous.order_by("chapter").first().candidates == ["liuermihou", "sunwukong"]
    assert not any("猴王" in row.aliases for row in Appearance.objects.filter(book=book, source="scan"))
    assert liuer.entity_id == "liuermihou"
