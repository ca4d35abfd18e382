"""Generic aliases (他, 老爷, 那个少年): weak mentions counted apart, never an appearance, never a
first appearance; marked in the roster, a card, an extraction or the admin."""

import pytest

from bookfiles.rebuilder import book_rebuild
from core.models import Book, Chapter
from entities.mentions import mentions_index
from entities.models import Alias, AmbiguousMention, Appearance, Entity
from entities.selectors import chapter_ambiguous_mentions, entity_appearances, entity_stats
from entities.services.ingest import extraction_ingest
from entities.services.marks import aliases_generic_set
from entities.services.writes import alias_add
from kernel.exceptions import InvalidInput
from tests.factories import CARD_JIANLAO, ROSTER, book_folder_make, book_row_make, entity_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def book():
    book = book_row_make(chapters=0)
    lin = entity_make(book, "linfeng", "林风", aliases=["小风"])
    alias_add(entity=lin, alias="少年", generic=True)
    lao = entity_make(book, "jianlao", "剑老")
    alias_add(entity=lao, alias="老者", generic=True)
    alias_add(entity=lao, alias="他", generic=True)
    alias_add(entity=lin, alias="他", generic=True)
    bodies = {1: "少年走进山门，老者笑了。他说：来了。", 2: "林风应声。少年抬头，他看见剑老。"}
    for n, body in bodies.items():
        Chapter.objects.create(book=book, number=n, title=f"第{n}章", body=body)
    mentions_index(book=book, numbers=None, removed=[])
    return book


def test_generic_mentions_are_weak_and_never_set_a_first_appearance(book):
    lin, lao = Entity.objects.get(entity_id="linfeng"), Entity.objects.get(entity_id="jianlao")
    # chapter 1 names them only by generic words: no appearance, no first appearance there
    assert list(Appearance.objects.filter(book=book).order_by("entity_id").values_list("entity_id", "chapter")) == [
        (lin.pk, 2),
        (lao.pk, 2),
    ]
    assert (lin.first_appearance, lao.first_appearance) == (2, 2)
    assert Appearance.objects.get(entity=lin).aliases == {"林风": 1}
    assert chapter_ambiguous_mentions(book=book) == [
        {
            "chapter": 1,
            "alias": "他",
            "count": 1,
            "first_offset": 12,
            "candidates": ["jianlao", "linfeng"],
            "generic": True,
        },
        {"chapter": 1, "alias": "少年", "count": 1, "first_offset": 0, "candidates": ["linfeng"], "generic": True},
        {"chapter": 1, "alias": "老者", "count": 1, "first_offset": 7, "candidates": ["jianlao"], "generic": True},
        {
            "chapter": 2,
            "alias": "他",
            "count": 1,
            "first_offset": 10,
            "candidates": ["jianlao", "linfeng"],
            "generic": True,
        },
        {"chapter": 2, "alias": "少年", "count": 1, "first_offset": 5, "candidates": ["linfeng"], "generic": True},
    ]
    assert entity_appearances(book=book, ref="linfeng")["weak_mentions"] == [
        {"chapter": 1, "alias": "他", "count": 1, "candidates": ["jianlao", "linfeng"]},
        {"chapter": 1, "alias": "少年", "count": 1, "candidates": ["linfeng"]},
        {"chapter": 2, "alias": "他", "count": 1, "candidates": ["jianlao", "linfeng"]},
        {"chapter": 2, "alias": "少年", "count": 1, "candidates": ["linfeng"]},
    ]
    stats = entity_stats(book=book)
    assert stats["generic_aliases"] == ["他", "少年", "老者"]
    assert stats["weak_mentions"] == 5
    assert stats["ambiguous_aliases"] == []  # 他 is shared by design, not a conflict
    assert stats["appearances"] == 2


def test_a_canonical_name_cannot_be_generic_and_generic_never_reverts(book):
    lin = Entity.objects.get(entity_id="linfeng")
    with pytest.raises(InvalidInput) as exc:
        alias_add(entity=lin, alias="林风", generic=True)
    assert exc.value.message == "正名 '林风' 不能标为泛称"
    alias_add(entity=lin, alias="少年")  # a plain re-add (an extraction naming it) keeps the mark
    assert Alias.objects.get(entity=lin, alias="少年").generic is True


def test_admin_service_marks_curated_aliases_and_leaves_file_ones(book):
    lin = Entity.objects.get(entity_id="linfeng")
    Alias.objects.filter(entity=lin, alias="小风").update(source="file")
    alias_add(entity=lin, alias="风儿", source="admin")
    Chapter.objects.create(book=book, number=3, title="第3章", body="风儿与小风。")
    mentions_index(book=book, numbers=[3], removed=[])
    assert Appearance.objects.get(entity=lin, chapter=3).aliases == {"小风": 1, "风儿": 1}
    result = aliases_generic_set(aliases=Alias.objects.filter(entity=lin, alias__in=["小风", "风儿"]), generic=True)
    assert result == {"changed": 1, "file_owned": 1}
    assert Appearance.objects.get(entity=lin, chapter=3).aliases == {"小风": 1}  # rescanned at once
    assert AmbiguousMention.objects.get(chapter=3).alias == "风儿"


def test_roster_and_card_mark_generic_aliases(tmp_path):
    card = CARD_JIANLAO.replace("aliases: [老者]", "aliases: [{alias: 老者, generic: true}]\ngeneric_aliases: [他]")
    roster = ROSTER.replace("  - 王伯", "  - name: 王伯\n    generic_aliases: [他, 老爷]")
    root = book_folder_make(tmp_path / "mini", {"设定/角色/剑老.md": card, "设定/名册.yaml": roster})
    report = book_rebuild(root=root)
    book = Book.objects.get(slug="mini")
    assert sorted(Alias.objects.filter(book=book, generic=True).values_list("entity__canonical_name", "alias")) == [
        ("剑老", "他"),
        ("剑老", "老者"),
        ("王伯", "他"),
        ("王伯", "老爷"),
    ]
    assert not [w for w in report["warnings"] if w["code"] == "alias_conflict"]
    assert Entity.objects.get(book=book, canonical_name="剑老").base_state == {}
    # chapter 2 reads "老者自称剑中残魂！他是谁？": only weak mentions; 剑老 is first named in chapter 3
    assert Entity.objects.get(book=book, canonical_name="剑老").first_appearance == 3
    assert [(m["alias"], m["candidates"]) for m in chapter_ambiguous_mentions(book=book, chapter=2)] == [
        ("他", ["jianlao", "wangbo"]),
        ("老者", ["jianlao"]),
    ]


def test_extraction_marks_a_new_entitys_alias_generic():
    book = book_row_make(chapters=2)
    Chapter.objects.filter(book=book, number=1).update(body="那个少年拔剑。赵元笑了。")
    payload = {
        "entities_new": [
            {
                "suggested_id": "zhaoyuan",
                "name": "赵元",
                "type": "角色",
                "aliases": ["赵师兄", {"alias": "那个少年", "generic": True}, "师兄"],
                "confidence": 0.9,
            }
        ]
    }
    report = extraction_ingest(book=book, number=1, payload=payload)
    assert report["created_entities"] == ["zhaoyuan"]
    assert dict(Alias.objects.filter(entity__entity_id="zhaoyuan").values_list("alias", "generic")) == {
        "赵师兄": False,
        "那个少年": True,
        "师兄": True,  # a bare role word: generic by the rule of entities/generic.py
    }
    assert AmbiguousMention.objects.get(book=book, chapter=1).alias == "那个少年"


def test_a_tag_s_alias_generic_by_grammar_is_marked_as_extraction_marks_it():
    # issue 31: <alias>那个少年</alias> inside <entity> and <entity-alias alias="老者"> need no generic="true"
    book = book_row_make(chapters=2)
    entity_make(book, "linfeng", "林风")
    Chapter.objects.filter(book=book, number=1).update(
        entity_tags=[
            {
                "line": 2,
                "text": '<entity type="角色" name="赵元"><alias>那个少年</alias><alias>赵师兄</alias></entity>',
            },
            {"line": 3, "text": '<entity-alias ref="linfeng" alias="老者"/>'},
            {"line": 4, "text": '<entity-alias ref="linfeng" alias="小风"/>'},
        ]
    )
    mentions_index(book=book, numbers=[1], removed=[])
    assert sorted(Alias.objects.filter(book=book).values_list("alias", "generic")) == [
        ("小风", False),
        ("老者", True),
        ("赵师兄", False),
        ("那个少年", True),
    ]
