import pytest

from core.models import Chapter
from entities.mentions import mentions_index
from entities.models import Appearance, Entity, Relationship, StateChange
from entities.selectors import alias_resolve, entity_relationships, entity_state_as_of
from entities.services.marks import entity_merge
from entities.services.writes import relationship_record, state_change_record
from kernel.exceptions import InvalidInput
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.django_db


def test_merge_moves_aliases_appearances_changes_and_relationships():
    book = book_row_make()
    Chapter.objects.create(book=book, number=1, title="", body="黑衣人出手，剑老叹息。")
    Chapter.objects.create(book=book, number=2, title="", body="剑老与神秘人同行，林风跟随。")
    lao = entity_make(book, "jianlao", "剑老", base_state={"realm": "残魂"})
    hei = entity_make(book, "heiyiren", "黑衣人", aliases=["神秘人"], base_state={"weapon": "黑剑", "realm": "未知"})
    lin = entity_make(book, "linfeng", "林风")
    mentions_index(book=book, numbers=None, removed=[])
    state_change_record(entity=hei, number=2, field="location", new="剑冢")
    relationship_record(from_entity=hei, to_entity=lin, type="守护", description="暗中护着林风", number=1)
    relationship_record(from_entity=lao, to_entity=lin, type="守护", description="剑中残魂护主", number=2)
    relationship_record(from_entity=hei, to_entity=lao, type="同一人", number=2)

    moved = entity_merge(source=hei, target=lao)

    assert moved == {"aliases": 3, "appearances": 2, "state_changes": 1, "relationships": 1, "relationships_dropped": 1}
    assert not Entity.objects.filter(entity_id="heiyiren").exists()
    lao.refresh_from_db()
    assert sorted(lao.aliases.values_list("alias", flat=True)) == ["heiyiren", "神秘人", "黑衣人"]
    assert alias_resolve(book=book, alias="heiyiren").entity_id == "jianlao"
    # Chapter 1: 剑老 once + 黑衣人 once; chapter 2: 剑老 + 神秘人.
    assert list(Appearance.objects.filter(entity=lao, source="scan").values_list("chapter", "count", "aliases")) == [
        (1, 2, {"剑老": 1, "黑衣人": 1}),
        (2, 2, {"剑老": 1, "神秘人": 1}),
    ]
    assert (lao.first_appearance, lao.last_appearance) == (1, 2)
    assert entity_state_as_of(entity=lao) == {"realm": "残魂", "weapon": "黑剑", "location": "剑冢"}
    assert StateChange.objects.get().entity == lao
    # The two 守护 relationships collapse into one with both events; the self-relationship is dropped.
    rel = Relationship.objects.get()
    assert (rel.from_entity, rel.type, rel.chapter, rel.last_chapter, rel.description) == (
        lao,
        "守护",
        1,
        2,
        "剑中残魂护主",
    )
    history = entity_relationships(book=book, ref="linfeng")["relationships"][0]["events"]
    assert [(e["chapter"], e["description"]) for e in history] == [(1, "暗中护着林风"), (2, "剑中残魂护主")]
    with pytest.raises(InvalidInput):
        entity_merge(source=lao, target=lao)
