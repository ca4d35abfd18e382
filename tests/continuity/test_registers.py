"""The check on another register's grammar (issue 27, session 11): a verb found by its place rather than
its tag (点了, 挺矛跃马, 按下), a disposal clause (把 + the item + its verb), a rank said without a copula
(不过一校尉), knowing in the half-classical register (方知), a common noun as a secret's keyword, a name
variant the book used before."""

import shutil
from pathlib import Path

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


def _rebuilt(root: Path) -> Book:
    with override_settings(
        WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
    ):
        assert book_rebuild(root=root)["ok"]
    return Book.objects.get(slug="demo-book")


def test_the_dead_act_by_a_verbs_place_not_only_its_tag(demo):
    text = draft(
        "赵乾点了根烟，慢慢说：“走。”\n"  # 4: 点 is tagged a numeral; 了 after it makes it a verb
        "赵乾一把揪住林风的衣领。\n"  # 5: 一把 (a count of one grab) before the verb
        "赵乾挺矛跃马，直取林风。\n"  # 6: 挺 is tagged an adverb (挺好); with an object and a verb after, it acts
        "赵乾低声说：“东西在我这儿。”\n"  # 7: 低声 tells how he speaks, it is no noun he modifies
        "赵乾留下的长刀挂在墙上。\n"  # a verb run on by 的: a relative clause, left by the dead
        "后人有诗叹赵乾曰：“一念差池身首异。”\n"  # 赵乾 is 叹's object: the poet speaks
        "赵乾挺好的。",  # 挺 an adverb here: said nothing
        chapter=25,
    )
    assert _found(draft_check(book=demo, text=text), "inactive_acts") == [
        (4, "error", "赵乾"),
        (5, "error", "赵乾"),
        (6, "error", "赵乾"),
        (7, "error", "赵乾"),
    ]


def test_an_item_in_a_disposal_clause_or_after_a_verb_tagged_a_preposition_is_used(demo):
    text = draft(
        "陆白鹭把青玉佩挂在腰间。\n"  # 4: 苏晚晴's; the verb comes after the item
        "陆白鹭按下青玉佩，\n"  # 5: 按 is tagged a preposition (按时); 下 completes it as a verb
        "陆白鹭把青玉佩看了又看。\n"  # looking is no use
        "林风将铜钥匙插进锁孔。",  # 7: given up in chapter 20
        chapter=25,
    )
    assert _found(draft_check(book=demo, text=text), "item_not_held") == [
        (4, "warning", "陆白鹭:青玉佩"),
        (5, "warning", "陆白鹭:青玉佩"),
        (7, "error", "林风:铜钥匙"),
    ]


def test_a_rank_said_without_a_copula_belongs_to_the_name_a_rank_after_a_verb_does_not(demo):
    text = draft(
        "林风如今也就炼气五层。\n"  # 4: 筑基初期 since chapter 20: lower
        "林风与三个炼气五层的弟子交手。\n"  # coordinated: the rank is theirs
        "林风斩了一个炼气五层的散修。",  # the verb's object has the rank
        chapter=25,
    )
    assert _found(draft_check(book=demo, text=text), "realm_lower") == [(4, "error", "林风:炼气五层")]


def test_the_point_of_view_knows_in_the_half_classical_register(demo):
    text = draft("林风方知苏晚晴乃陆家遗孤。", chapter=25, perspective="林风")  # not a knower
    assert _found(draft_check(book=demo, text=text), "pov_knowledge") == [(5, "warning", "陆家遗孤")]
    told = draft("陆白鹭方知苏晚晴乃陆家遗孤。", chapter=25, perspective="林风")  # another knows, not the POV
    assert _found(draft_check(book=demo, text=told), "pov_knowledge") == []
    # not knowing, and feeling: no knowledge shown (the synthetic book's 让林风只觉浑身发冷)
    unknowing = draft("林风不知苏晚晴乃陆家遗孤。\n陆家遗孤四字让林风只觉浑身发冷。", chapter=25, perspective="林风")
    assert _found(draft_check(book=demo, text=unknowing), "pov_knowledge") == []


def test_a_common_noun_keyword_leaks_only_beside_whom_the_secret_is_about(tmp_path):
    root = (
        shutil.copytree(DEMO_BOOK, tmp_path / "demo-book")
        if DEMO_BOOK.exists()
        else pytest.skip("the demo book (examples/demo-book) is absent")
    )
    secret = root / "信息差" / "信息差-002.md"
    # the secret is who the 卧底 is: the word alone says there is one, not who
    head = secret.read_text(encoding="utf-8").replace("[幽冥令, 殿主密令]", "[幽冥令, 殿主密令, 卧底]")
    secret.write_text(head.replace("title: 沈墨是幽冥殿暗桩", "title: 沈墨是幽冥殿的卧底"), encoding="utf-8")
    book = _rebuilt(root)
    text = draft("宗门之中必有卧底。\n沈墨原是幽冥殿的卧底。", chapter=25)  # 卧底 is a noun of the dictionary
    assert _found(draft_check(book=book, text=text), "secret_early") == [(5, "warning", "卧底")]
    # a secret that is no one's identity (a poison, a letter): its keyword leaks alone, as before
    secret.write_text(head.replace("title: 沈墨是幽冥殿暗桩", "title: 沈墨在宗门中安插卧底"), encoding="utf-8")
    book = _rebuilt(root)
    assert _found(draft_check(book=book, text=text), "secret_early") == [(4, "warning", "卧底")]


def test_a_variant_the_book_used_before_is_one_info_then_silent(tmp_path):
    root = (
        shutil.copytree(DEMO_BOOK, tmp_path / "demo-book")
        if DEMO_BOOK.exists()
        else pytest.skip("the demo book (examples/demo-book) is absent")
    )
    chapters = sorted((root / "定稿" / "正文").rglob("第*章.md"))
    for path in chapters[21:23]:  # 第22、23章: a gatekeeper 林锋 beside 林风
        head, body = path.read_text(encoding="utf-8").split("---\n", 2)[1:]
        path.write_text(f"---\n{head}---\n林锋守在山门口。\n{body}", encoding="utf-8")
    book = _rebuilt(root)
    once = draft_check(book=book, text=draft("林锋又来了。", chapter=23))  # used in 第22章 only
    assert _found(once, "name_typo") == [(4, "info", "林锋")]
    twice = draft_check(book=book, text=draft("林锋又来了。", chapter=25))  # in 第22、23章: the book's own name
    assert _found(twice, "name_typo") == []
