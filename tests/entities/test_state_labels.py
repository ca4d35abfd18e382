"""State keys and changes as the author reads them: the house labels, a book's own, sentences."""

from types import SimpleNamespace

from entities.state_labels import state_change_sentence, state_field_label, state_labels, state_text


def test_sentences_of_each_op():
    assert state_change_sentence(field="spirit_stones", op="inc", new=5) == "灵石 +5"
    assert state_change_sentence(field="spirit_stones", op="inc", new=-3) == "灵石 -3"
    assert state_change_sentence(field="skills", op="add", new="听雨诀") == "功法 新增「听雨诀」"
    assert state_change_sentence(field="possessions", op="remove", new="断剑青岚") == "持有物 去掉「断剑青岚」"
    assert state_change_sentence(field="realm", op="set", new="筑基初期") == "境界 → 筑基初期"
    assert state_change_sentence(field="心魔", op="unset", new=None) == "心魔 清除"


def test_a_book_names_its_own_keys_over_the_house_table():
    book = SimpleNamespace(config={"state_labels": {"realm": "修为", "qi": "真气"}})
    labels = state_labels(book=book)
    assert (state_field_label("realm", labels), state_field_label("qi", labels)) == ("修为", "真气")
    assert state_field_label("coolpoint") == "爽点" and state_field_label("hook") == "钩子"
    assert state_text({"realm": "炼气三层", "skills": ["青岚十三式", "听雨诀"]}, labels) == (
        "修为：炼气三层；功法：青岚十三式、听雨诀"
    )
