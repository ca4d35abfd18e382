"""The P0 reads an agent calls at every chapter (``character``, ``alias-resolve``, ``thread-overdue``) on
the demo book: their concrete answers, how a name is resolved (an id first, then the names), and how
many queries each costs (issue 29: each read is a few set-based queries, never one per row)."""

import pytest

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from entities import selectors
from entities.models import Alias, Entity
from kernel.exceptions import Ambiguous, NotFound
from tests.conftest import DEMO_BOOK
from threads import selectors as thread_selectors

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db):
    if not (DEMO_BOOK / "book.yaml").exists():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    report = book_rebuild(root=DEMO_BOOK)
    assert report["ok"], report["errors"]
    return Book.objects.get(slug="demo-book")


def test_a_character_by_id_by_name_and_by_alias_is_one_answer_in_three_queries(demo, django_assert_num_queries):
    # the character; the current chapter, its card's headings and its aliases in one; its changes
    with django_assert_num_queries(3):
        by_name = selectors.character_meta(book=demo, name="林风")
    assert selectors.character_meta(book=demo, name="linfeng") == by_name
    assert selectors.character_meta(book=demo, name="林师弟") == by_name
    assert (by_name["id"], by_name["source"], by_name["sections"]) == ("linfeng", "角色卡", ["外貌", "性格", "来历"])
    assert by_name["aliases"] == ["小风", "林小子", "林师弟", "青岚剑子"]
    # A name a place shares (白鹭 is also 白鹭洲's alias): the character read looks among characters only.
    assert selectors.character_meta(book=demo, name="白鹭")["id"] == "lubailu"


def test_an_id_wins_over_the_same_text_as_another_character_s_alias(demo):
    Entity.objects.create(book=demo, entity_id="小风", type="角色", canonical_name="风小小")
    assert selectors.character_meta(book=demo, name="小风")["name"] == "风小小"
    assert selectors.character_meta(book=demo, name="林小子")["name"] == "林风"


def test_an_alias_of_two_characters_is_ambiguous_and_lists_them(demo):
    jianlao = Entity.objects.get(book=demo, entity_id="jianlao")
    Alias.objects.create(book=demo, entity=jianlao, alias="小风")
    with pytest.raises(Ambiguous) as caught:
        selectors.character_meta(book=demo, name="小风")
    assert caught.value.message == "别名歧义: '小风' 命中 2 个实体，请改用 id 或补充 type 属性"
    assert caught.value.extra == {
        "alias": "小风",
        "candidates": [
            {"id": "jianlao", "type": "角色", "canonical_name": "剑老"},
            {"id": "linfeng", "type": "角色", "canonical_name": "林风"},
        ],
    }
    with pytest.raises(NotFound, match="别名 '雾海' 没有对应的实体"):
        selectors.character_meta(book=demo, name="雾海")  # a place


def test_alias_resolve_is_one_query(demo, django_assert_num_queries):
    with django_assert_num_queries(1):
        answer = selectors.alias_lookup(book=demo, alias="小风", type="角色")
    assert answer == {"alias": "小风", "id": "linfeng", "type": "角色", "canonical_name": "林风"}
    # 白鹭 names a place and a character: without a type it is a 409 listing both, in (type, id) order.
    with pytest.raises(Ambiguous) as caught:
        selectors.alias_lookup(book=demo, alias="白鹭")
    assert [(c["type"], c["id"]) for c in caught.value.extra["candidates"]] == [
        ("地点", "loc_bailuzhou"),
        ("角色", "lubailu"),
    ]
    # 青岚剑子 is his alias from chapter 13 on.
    assert selectors.alias_lookup(book=demo, alias="青岚剑子", chapter=13)["id"] == "linfeng"
    with pytest.raises(NotFound):
        selectors.alias_lookup(book=demo, alias="青岚剑子", chapter=12)


@pytest.mark.django_db(transaction=True)  # the activity map is cached outside a transaction only
def test_thread_overdue_answers_in_three_queries(demo, django_assert_num_queries):
    thread_selectors.thread_list_overdue(book=demo)  # the activity map, built once per book version
    # the stamp of the activity map (with the current chapter), the volumes, the open threads
    with django_assert_num_queries(3):
        overdue = thread_selectors.thread_list_overdue(book=demo)
    assert overdue == {
        "current_chapter": 24,
        "threads": [
            {
                "id": "悬念-001",
                "type": "悬念",
                "title": "禁地夜半剑鸣",
                "strength": "中",
                "last_activity_chapter": 8,
                "hang": 16,
                "threshold": 10,
                "planned_end_chapter": None,
                "past_planned_end": False,
                "overdue_reason": "已悬置 16 章（最后推进于第8章），超过阈值 10",
                "over_by": 6,
            }
        ],
    }
    # Looking back to chapter 10: 伏笔-002 was still open then (closed in chapter 14).
    back = thread_selectors.thread_hangs(book=demo, as_of=10)
    assert (back["as_of"], back["current_chapter"]) == (10, 24)
    assert list(back["threads"]) == ["伏笔-001", "伏笔-002", "伏笔-003", "伏笔-004", "悬念-001", "感情线-001"]
    assert (back["threads"]["伏笔-002"]["status"], back["threads"]["伏笔-002"]["hang"]) == ("已收尾", 3)
    assert back["threads"]["伏笔-001"]["planned_end_written"] == "第40章"
