import pytest

from entities.models import StateChange
from entities.selectors import entity_state_as_of, entity_state_changes
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.django_db


def _change(entity, chapter, field, op, new, seq=0):
    return StateChange.objects.create(
        book=entity.book, entity=entity, chapter=chapter, seq=seq, field=field, op=op, new=new
    )


def test_state_as_of_replays_every_operation():
    book = book_row_make()
    lin = entity_make(book, "linfeng", "林风", base_state={"realm": "炼气三层", "possessions": ["断剑青岚"]})
    _change(lin, 3, "realm", "set", "炼气四层")
    _change(lin, 5, "possessions", "add", "玉佩")
    _change(lin, 5, "spirit_stones", "inc", 10, seq=1)
    _change(lin, 7, "spirit_stones", "inc", -4)
    _change(lin, 8, "possessions", "remove", "断剑青岚")
    _change(lin, 9, "realm", "unset", None)

    assert entity_state_as_of(entity=lin, number=2) == {"realm": "炼气三层", "possessions": ["断剑青岚"]}
    assert entity_state_as_of(entity=lin, number=5) == {
        "realm": "炼气四层",
        "possessions": ["断剑青岚", "玉佩"],
        "spirit_stones": 10,
    }
    assert entity_state_as_of(entity=lin, number=8) == {
        "realm": "炼气四层",
        "possessions": ["玉佩"],
        "spirit_stones": 6,
    }
    assert entity_state_as_of(entity=lin, number=None) == {"possessions": ["玉佩"], "spirit_stones": 6}
    assert [(c["chapter"], c["field"], c["op"]) for c in entity_state_changes(entity=lin, field="spirit_stones")] == [
        (5, "spirit_stones", "inc"),
        (7, "spirit_stones", "inc"),
    ]
