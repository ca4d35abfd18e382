"""Precision on books the check was not tuned on (issue 27): a dream or a ghost told in the paragraph,
a name after a preposition, quotations nested over an e-book's wrapped lines, a chapter's own quoting
habit, name variants that read as names of their own, a kind of thing rather than one named item."""

import shutil

import pytest
from django.test import override_settings

from bookfiles.rebuilder import book_rebuild
from continuity.selectors import draft_check
from core.models import Book
from tests.conftest import DEMO_BOOK
from tests.continuity.conftest import draft

pytestmark = pytest.mark.django_db


def _found(result: dict, kind: str) -> list[tuple[int, str, str]]:
    return [(f["line"], f["severity"], f["term"]) for f in result["findings"] if f["kind"] == kind]


def test_the_dead_seen_in_a_dream_or_named_after_a_preposition_do_not_act(demo):
    text = draft(
        "是夜林风独坐，闪出一人，却是赵乾，叫道：“你来了。”林风惊醒，原来是一梦。\n"  # a dream: silent
        "林风对赵乾道：“你安心去罢。”\n"  # 赵乾 is 对's object: 林风 speaks
        "赵乾道：“还我命来！”",  # 6: the dead speaking, no dream told: an error
        chapter=25,
    )
    assert _found(draft_check(book=demo, text=text), "inactive_acts") == [(6, "error", "赵乾")]


def test_quotations_nested_over_wrapped_lines_are_the_standard_nesting(demo):
    text = draft(
        "林风道：“你听我说，那年师父\n\n说道：‘剑在人在，\n\n剑亡人亡。’我至今记得。”\n"  # ‘’ inside “” over three paragraphs
        "苏晚晴道：“今日才认得『青岚』二字。”\n"  # 『』 nested inside “”: the author's nesting
        "沈墨道：『走吧。』",  # 10: a speech of its own in 『』: a breach
        chapter=25,
    )
    assert _found(draft_check(book=demo, text=text), "quote_style") == [(10, "warning", "『』")]


def test_a_chapter_that_quotes_in_another_mark_throughout_is_one_info(demo):
    # the book's chapters never use 「」, but this one does on every line: its own habit, not a slip
    text = draft("「走吧。」她说。\n林风点头。\n「快走！」沈墨道。\n「天要黑了。」苏晚晴道。", chapter=25)
    [(line, severity, term)] = _found(draft_check(book=demo, text=text), "quote_style")
    assert (line, severity, term) == (4, "info", "「」")
    [quote] = [f for f in draft_check(book=demo, text=text)["findings"] if f["kind"] == "quote_style"]
    assert (
        quote["message"] == "本章 3 行用了 「」 引号 3 处（第 4、6、7 行），文风规定为 “”；本章用得一贯，引号体例不一"
    )


def test_a_name_variant_in_a_list_of_names_is_an_info_a_function_word_is_none(demo):
    text = draft(
        "苏婉晴低头不语。\n"  # 4: a homophone of 苏晚晴, alone: a warning
        "那日林风、沈墨、苏婉晴都来了。\n"  # 5: the same beside known names in a list: no more than the first
        "沈莫再提此事。",  # 莫 is an adverb by the dictionary: 沈 + 莫, no variant of 沈墨
        chapter=25,
    )
    assert _found(draft_check(book=demo, text=text), "name_typo") == [(4, "warning", "苏婉晴")]
    listed = draft_check(book=demo, text=draft("那日林风、沈墨、苏婉晴都来了。", chapter=25))
    [typo] = [f for f in listed["findings"] if f["kind"] == "name_typo"]
    assert (typo["line"], typo["severity"], typo["term"]) == (4, "info", "苏婉晴")
    assert typo["evidence"]["fact"].endswith("；紧挨已知人名") or "并列" in typo["evidence"]["fact"]


def test_a_point_of_view_without_a_card_is_no_knower(demo):
    text = draft("周青早就知道苏晚晴是陆家遗孤。", chapter=25, perspective="周青")  # 周青 has no card
    assert _found(draft_check(book=demo, text=text), "pov_knowledge") == [(5, "warning", "陆家遗孤")]


def test_a_kind_of_thing_held_by_another_is_an_info_one_named_object_a_warning(tmp_path):
    root = (
        shutil.copytree(DEMO_BOOK, tmp_path / "demo-book")
        if DEMO_BOOK.exists()
        else pytest.skip("the demo book (examples/demo-book) is absent")
    )
    card = root / "设定" / "角色" / "苏晚晴.md"
    card.write_text(card.read_text(encoding="utf-8").replace("[青玉佩]", "[青玉佩, 长剑]"), encoding="utf-8")
    with override_settings(
        WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
    ):
        assert book_rebuild(root=root)["ok"]
    book = Book.objects.get(slug="demo-book")
    text = draft("陆白鹭拔出长剑，\n陆白鹭握着青玉佩。", chapter=25)  # 长剑 is a noun of the dictionary
    assert _found(draft_check(book=book, text=text), "item_not_held") == [
        (4, "info", "陆白鹭:长剑"),
        (5, "warning", "陆白鹭:青玉佩"),
    ]


def test_the_dead_leaving_in_an_idiom_of_manner_and_verb_act(demo):
    text = draft(
        "赵乾拂袖而去。\n"  # 4: 拂袖而去 is one idiom (i) whose verb after 而 is 去: the dead act
        "赵乾含恨而死，林风犹记得。\n"  # the verb after 而 is dying: told, not acted
        "赵乾德高望重。",  # an idiom without 而 + verb: said nothing (precision first)
        chapter=25,
    )
    assert _found(draft_check(book=demo, text=text), "inactive_acts") == [(4, "error", "赵乾")]


def test_a_variant_holding_a_describing_word_is_still_a_typo_one_holding_a_title_is_not(tmp_path):
    root = (
        shutil.copytree(DEMO_BOOK, tmp_path / "demo-book")
        if DEMO_BOOK.exists()
        else pytest.skip("the demo book (examples/demo-book) is absent")
    )
    (root / "设定" / "角色" / "孟婆婆.md").write_text("---\nname: 孟婆婆\nstatus: 存活\n---\n", encoding="utf-8")
    (root / "设定" / "角色" / "王大娘.md").write_text("---\nname: 王大娘\nstatus: 存活\n---\n", encoding="utf-8")
    with override_settings(
        WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
    ):
        assert book_rebuild(root=root)["ok"]
    book = Book.objects.get(slug="demo-book")
    # 婆娑 is a state word (z): no way of naming someone; 大哥 is a noun: 王大哥 is another person
    text = draft("孟婆娑拄着拐杖进来。\n王大哥拄着拐杖进来。", chapter=25)
    assert [t for _, _, t in _found(draft_check(book=book, text=text), "name_typo")] == ["孟婆娑"]


def test_an_item_run_on_by_an_adverb_and_a_verb_is_used(demo):
    # 青玉佩 is 苏晚晴's: 赶将去 goes on after it (the tagger reads 赶将 as an adverb, then 去 a verb)
    text = draft("陆白鹭握着青玉佩赶将去。\n陆白鹭握着青玉佩盒。", chapter=25)
    assert _found(draft_check(book=demo, text=text), "item_not_held") == [(4, "warning", "陆白鹭:青玉佩")]
