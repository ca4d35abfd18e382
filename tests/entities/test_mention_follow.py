"""The mention scan is a function of the chapters' text and the book's current names, whatever the
order of the writes: a name an ingestion, a confirm, a merge or a generic mark changes is rescanned
in every chapter where it occurs (earlier ones too), so the live tables equal a full rescan and a
rebuild that replays the journal (which defers the rescans to one at its end)."""

import pytest

from core.models import Chapter
from core.search import search_chapters_containing, search_index_update
from entities import mentions
from entities.mentions import chapters_naming, mentions_follow, mentions_index
from entities.models import Alias, AmbiguousMention, Appearance, Entity, PendingItem
from entities.services.ingest import extraction_ingest
from entities.services.marks import aliases_generic_set, entity_merge
from entities.services.pending import pending_item_confirm
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.django_db

BODIES = {
    1: "赵元拦住林风。赵师兄笑了。",
    2: "林风独自下山。",
    3: "老赵与赵元同桌，宗主不语。",
    4: "宗主来了。",
}


@pytest.fixture
def book():
    book = book_row_make(chapters=0)
    entity_make(book, "linfeng", "林风")
    entity_make(book, "songzongzhu", "宋宗主", aliases=["宗主"])
    entity_make(book, "zhangzongzhu", "张宗主", aliases=["宗主"])
    for n, body in BODIES.items():
        Chapter.objects.create(book=book, number=n, title=f"第{n}章", body=body)
    mentions_index(book=book, numbers=None, removed=[])
    return book


def _zhao(chapter: int, confidence: float = 0.95) -> dict:
    return {
        "entities_new": [
            {
                "suggested_id": "zhaoyuan",
                "name": "赵元",
                "type": "角色",
                "aliases": ["赵师兄"],
                "confidence": confidence,
            }
        ]
    }


def _scan(book) -> tuple[list, list, list]:
    """The scan's rows and every entity's first / last appearance, as plain values."""
    rows = sorted(
        Appearance.objects.filter(book=book, source="scan").values_list(
            "entity__entity_id", "chapter", "count", "first_offset"
        )
    )
    ambiguous = sorted(AmbiguousMention.objects.filter(book=book).values_list("chapter", "alias", "count"))
    spans = sorted(Entity.objects.filter(book=book).values_list("entity_id", "first_appearance", "last_appearance"))
    return rows, ambiguous, spans


def test_an_ingested_name_is_scanned_in_earlier_chapters_too(book):
    # Ingested at chapter 3, 赵元 / 赵师兄 are found in chapter 1 as well. Until this change only the
    # ingested chapter was rescanned (chapter 1 waited for `rescan_mentions`), and a rebuild gave
    # whatever order the ingestions had happened in.
    extraction_ingest(book=book, number=3, payload=_zhao(3))
    zhao = Entity.objects.get(book=book, entity_id="zhaoyuan")
    assert list(
        Appearance.objects.filter(entity=zhao, source="scan").order_by("chapter").values_list("chapter", "count")
    ) == [(1, 2), (3, 1)]
    zhao.refresh_from_db()
    assert (zhao.first_appearance, zhao.last_appearance) == (1, 3)


def test_live_scan_equals_a_full_rescan_whatever_the_order(book):
    extraction_ingest(book=book, number=3, payload=_zhao(3))
    extraction_ingest(book=book, number=1, payload=_zhao(1))
    live = _scan(book)
    mentions_index(book=book, numbers=None, removed=[])
    assert _scan(book) == live
    assert ("zhaoyuan", 1, 2, 0) in live[0] and ("zhaoyuan", 3, 1, 3) in live[0]


def test_a_confirmed_new_entity_is_scanned_where_it_occurs(book):
    extraction_ingest(book=book, number=4, payload=_zhao(4, confidence=0.3))  # held: no entity yet
    assert not Entity.objects.filter(book=book, entity_id="zhaoyuan").exists()
    item = PendingItem.objects.get(book=book, chapter=4, kind="entity_new")
    pending_item_confirm(item=item)
    zhao = Entity.objects.get(book=book, entity_id="zhaoyuan")
    # chapter 4 (the item's own) never names him: the chapters that do are rescanned instead
    assert list(
        Appearance.objects.filter(entity=zhao, source="scan").order_by("chapter").values_list("chapter", flat=True)
    ) == [1, 3]


def test_a_merge_resolves_the_name_the_two_shared(book):
    assert sorted(AmbiguousMention.objects.filter(book=book).values_list("chapter", "alias")) == [
        (3, "宗主"),
        (4, "宗主"),
    ]
    song = Entity.objects.get(book=book, entity_id="songzongzhu")
    entity_merge(source=Entity.objects.get(book=book, entity_id="zhangzongzhu"), target=song)
    assert not AmbiguousMention.objects.filter(book=book).exists()
    assert list(
        Appearance.objects.filter(entity=song, source="scan").order_by("chapter").values_list("chapter", "aliases")
    ) == [(3, {"宗主": 1}), (4, {"宗主": 1})]
    live = _scan(book)
    mentions_index(book=book, numbers=None, removed=[])
    assert _scan(book) == live


def test_a_generic_mark_rescans_the_chapters_naming_the_alias(book):
    alias = Alias.objects.create(
        book=book, entity=Entity.objects.get(entity_id="linfeng"), alias="下山", source="admin"
    )
    mentions_index(book=book, numbers=[2], removed=[])
    assert Appearance.objects.get(book=book, chapter=2, source="scan").aliases == {"下山": 1, "林风": 1}
    aliases_generic_set(aliases=[alias], generic=True)
    assert Appearance.objects.get(book=book, chapter=2, source="scan").aliases == {"林风": 1}
    assert list(AmbiguousMention.objects.filter(book=book, chapter=2).values_list("alias", "generic")) == [
        ("下山", True)
    ]


def test_mentions_follow_rescans_once_at_the_end(book, monkeypatch):
    calls = []
    real = mentions.mentions_index
    monkeypatch.setattr(mentions, "mentions_index", lambda **kw: calls.append(kw["numbers"]) or real(**kw))
    with mentions_follow(book=book):
        extraction_ingest(book=book, number=3, payload=_zhao(3))
        extraction_ingest(book=book, number=2, payload={"entities_new": [{"name": "独自", "type": "角色"}]})
        assert calls == []  # nothing rescanned inside the block
    assert calls == [[1, 2, 3]]
    live = _scan(book)
    real(book=book, numbers=None, removed=[])
    assert _scan(book) == live


def test_chapters_naming_from_the_search_index_and_by_reading_agree(book):
    names = {"赵元", "宗主", "不在书里", "笑"}  # three, two and one characters
    # the factory's chapters have no content hash: no index holds them, the bodies are read
    assert search_chapters_containing(book=book, terms=names) is None
    assert chapters_naming(book=book, names=names) == [1, 3, 4]
    for chapter in Chapter.objects.filter(book=book):
        chapter.content_hash = f"h{chapter.number}"
        chapter.save(update_fields=["content_hash"])
    search_index_update(book=book, numbers=None)
    assert search_chapters_containing(book=book, terms=names) == {1, 3, 4}
    assert chapters_naming(book=book, names=names) == [1, 3, 4]
    assert chapters_naming(book=book, names={"第2章"}) == [2]  # the title counts too
    assert chapters_naming(book=book, names=set()) == []
    # a body changed without the indexer: the index no longer answers
    Chapter.objects.filter(book=book, number=2).update(body="赵元来了。", content_hash="h2b")
    assert search_chapters_containing(book=book, terms=names) is None
    assert chapters_naming(book=book, names={"赵元"}) == [1, 2, 3]
