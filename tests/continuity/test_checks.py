"""Each finding kind on real text: drafts written against the demo book (state as of chapter 24 unless
said otherwise), with contradictions planted at known lines and sentences that must stay silent."""

import pytest

from continuity.selectors import draft_check
from tests.continuity.conftest import draft

pytestmark = pytest.mark.django_db


def found(result: dict, kind: str) -> list[tuple[int, str, str]]:
    return [(f["line"], f["severity"], f["term"]) for f in result["findings"] if f["kind"] == kind]


def test_a_dead_character_who_speaks_or_acts_is_an_error_a_mention_is_not(demo):
    text = draft(
        "赵乾冷笑道：“你们谁也走不了。”\n"  # line 4: speaks (赵乾 伏诛 in chapter 19)
        "“我早就知道。”赵乾说。\n"  # 5: speaks after the quote
        "赵乾缓缓拔出长刀。\n"  # 6: acts
        "林风想起赵乾当年的嘴脸。\n"  # remembered
        "“赵乾已经伏诛了。”苏晚晴道。\n"  # talked about inside someone's speech
        "赵乾的旧居空着，门上贴着封条。\n"  # possessive
        "王伯点了点头。",  # alive: nothing
        chapter=25,
    )
    result = draft_check(book=demo, text=text)
    assert result["as_of"] == 24
    assert found(result, "inactive_acts") == [(4, "error", "赵乾"), (5, "error", "赵乾"), (6, "error", "赵乾")]
    first = next(f for f in result["findings"] if f["kind"] == "inactive_acts")
    assert first["evidence"]["chapter"] == 19
    assert first["evidence"]["file"] == "定稿/正文/第2卷/第0019章.md"
    assert first["evidence"]["line"] == 43
    assert "伏诛" in first["evidence"]["fact"]
    assert first["quote"].startswith("赵乾冷笑道")


def test_a_dead_character_acts_in_the_classical_register_too_ghosts_and_descriptions_do_not(demo):
    text = draft(
        "赵乾曰：“尔等休走。”\n"  # 4: 曰 (speech by the clause that opens a quotation)
        "赵乾叱曰：“退下！”\n"  # 5
        "赵乾大呼：“拿下！”\n"  # 6
        "赵乾提刀上马，\n"  # 7: 提 (a verb by its part of speech)
        "赵乾纵马出阵。\n"  # 8: 纵 (tagged a noun alone; a verb by the dictionary's words)
        "赵乾方知中计。\n"  # 9: knowing
        "赵乾之魂夜夜来扰。\n"  # a ghost
        "赵乾阴魂不散，叫道：“还我命来！”\n"  # a ghost speaking
        "赵乾已死多时。\n"  # dying describes, not acts
        "赵乾是个刻薄的人。\n"  # a copula describes
        "赵乾旧居门上写道：“此屋出售”\n"  # 赵乾 modifies a noun
        "赵乾与沈墨的旧账，林风记得。",  # coordination: said nothing (precision first)
        chapter=25,
    )
    result = draft_check(book=demo, text=text)
    assert [line for line, _, _ in found(result, "inactive_acts")] == [4, 5, 6, 7, 8, 9]


def test_a_status_that_is_not_declared_inactive_may_speak(demo):
    # 剑老 is 残魂 (a soul in a sword): the demo book's inactive statuses do not include it.
    result = draft_check(book=demo, text=draft("剑老骂道：“蠢小子！”", chapter=25))
    assert found(result, "inactive_acts") == []


def test_realm_lower_and_realm_jump(demo):
    text = draft(
        "林风不过是炼气五层。\n"  # 4: lower than 筑基初期 (chapter 20)
        "林风已是元婴中期。\n"  # 5: a jump with no breakthrough
        "林风已是筑基中期。\n"  # 5: one step: fine
        "沈墨突破了，已是金丹初期。\n"  # 6: a jump, but a breakthrough is written
        "三年前，林风还是炼气三层。\n"  # past: fine
        "这颗金丹是林风的。",  # 金丹 the pill, no predicate: fine
        chapter=25,
    )
    result = draft_check(book=demo, text=text)
    assert found(result, "realm_lower") == [(4, "error", "林风:炼气五层")]
    assert found(result, "realm_jump") == [(5, "warning", "林风:元婴中期")]
    lower = next(f for f in result["findings"] if f["kind"] == "realm_lower")
    assert lower["evidence"]["chapter"] == 20 and lower["evidence"]["line"] == 41


def test_realm_raised_by_the_drafts_own_tag_is_not_a_jump(demo):
    text = draft(
        '林风已是金丹初期。\n<entity-update id="linfeng"><set field="realm" value="金丹初期"/></entity-update>',
        chapter=25,
    )
    assert found(draft_check(book=demo, text=text), "realm_jump") == []


def test_items_no_longer_held_or_held_by_another(demo):
    text = draft(
        "林风掏出铜钥匙，插进锁孔。\n"  # 4: given in 14, left in the sword tomb in 20
        "陆白鹭握着青玉佩。\n"  # 5: 苏晚晴's
        "林风拔出断剑。\n"  # his own: fine
        "林风看着苏晚晴腰间的青玉佩。",  # not a use
        chapter=25,
    )
    result = draft_check(book=demo, text=text)
    assert found(result, "item_not_held") == [(4, "error", "林风:铜钥匙"), (5, "warning", "陆白鹭:青玉佩")]
    key = result["findings"][0]
    assert key["evidence"]["chapter"] == 20


def test_items_used_by_any_verb_found_by_its_part_of_speech(demo):
    text = draft(
        "林风捧起铜钥匙转身就走。\n"  # 4: 捧起 (a verb by its part of speech), 转身 after the item
        "陆白鹭拿起青玉佩，\n"  # 5: 拿起, 苏晚晴's
        "陆白鹭看着青玉佩出神。\n"  # looking is no use
        "陆白鹭歪着头看那青玉佩。",  # the verb nearest the item is 看: no use
        chapter=25,
    )
    result = draft_check(book=demo, text=text)
    assert found(result, "item_not_held") == [(4, "error", "林风:铜钥匙"), (5, "warning", "陆白鹭:青玉佩")]


def test_alias_before_its_window(demo):
    text = draft("青岚剑子走上台来。", chapter=10)  # 林风's alias from chapter 13
    result = draft_check(book=demo, text=text)
    assert found(result, "alias_window") == [(4, "warning", "青岚剑子")]
    assert result["findings"][0]["evidence"]["file"] == "设定/角色/林风.md"
    assert found(draft_check(book=demo, text=text.replace("chapter: 10", "chapter: 13")), "alias_window") == []


def test_an_alias_outside_its_window_inside_speech_or_verse_is_an_info(demo):
    text = draft(
        "苏晚晴道：“听说青岚剑子要来。”\n"  # 4: quoted
        "青岚剑子，白衣如雪。孤峰独立，不问归期。",  # 5: a line of verse (four clauses of four)
        chapter=10,
    )
    assert found(draft_check(book=demo, text=text), "alias_window") == [
        (4, "info", "青岚剑子"),
        (5, "info", "青岚剑子"),
    ]


def test_name_typos_homophones_and_one_off(demo):
    text = draft(
        "林峰点了点头。\n"  # 4: 林风
        "苏婉晴站在檐下。\n"  # 5: 苏晚晴
        "陆白露赤足踏水。\n"  # 6: 陆白鹭
        "他临风而立，沈墨也来了。",  # 临风 is not 林风's surname: nothing
        chapter=25,
    )
    result = draft_check(book=demo, text=text)
    assert found(result, "name_typo") == [
        (4, "warning", "林峰"),
        (5, "warning", "苏婉晴"),
        (6, "warning", "陆白露"),
    ]


def test_name_typos_for_precision_words_aliases_and_a_consistent_variant(demo):
    text = draft(
        "林锋拔剑。林锋收剑。\n"  # 4: one finding for the variant, with its count and lines
        "林锋又拔剑。\n"  # 5
        "林风应了一声。林风走了。林风回头。林风笑了。\n"
        "他面临风雨。\n"  # 临风 inside 面临: its first character ends a word
        "那人林立于山门。\n"  # 林立 is a word of the dictionary
        "小风吹过檐下。",  # 小风 (林风's alias without the surname) is matched whole: no 晓风 typo etc.
        chapter=25,
    )
    result = draft_check(book=demo, text=text)
    [typo] = [f for f in result["findings"] if f["kind"] == "name_typo"]
    assert (typo["line"], typo["severity"], typo["term"]) == (4, "warning", "林锋")
    assert typo["message"] == "「林锋」与已知人名「林风」同音，本章出现 3 次（第 4、5 行）"
    # the same variant as the draft's own spelling (used more than the declared name): one info, a new name?
    own = draft_check(book=demo, text=draft("林锋拔剑。林锋收剑。林锋走了。林风没来。", chapter=25))
    [info] = [f for f in own["findings"] if f["kind"] == "name_typo"]
    assert (info["severity"], info["term"]) == ("info", "林锋")
    assert info["message"].endswith("用得一贯：是一个新名字吗？")


def test_a_name_run_on_by_a_homophone_of_a_longer_name_is_a_typo_a_word_after_it_is_not(demo):
    # 云鹤 is itself a name (云鹤真人's alias): 云鹤真仁 matches as 云鹤 + 真仁, and 真仁 sounds as 真人
    text = draft("云鹤真仁缓步走来。\n云鹤真人点了点头。\n云鹤振衣而起。", chapter=25)
    [typo] = [f for f in draft_check(book=demo, text=text)["findings"] if f["kind"] == "name_typo"]
    assert (typo["line"], typo["severity"], typo["term"]) == (4, "warning", "云鹤真仁")
    assert typo["message"] == "「云鹤真仁」与已知人名「云鹤真人」同音，本章出现 1 次（第 4 行）"
    assert typo["evidence"]["file"] == "设定/角色/云鹤真人.md"


def test_secret_keywords_before_the_reader_is_told_and_pov_knowledge(demo):
    text = draft(
        "沈墨摸了摸袖中的幽冥令。\n"  # 5: 信息差-002, reader not told
        "林风早就知道苏晚晴是陆家遗孤。\n"  # 6: reader told in 22, 林风 not a knower
        "“她是陆家遗孤。”云鹤真人说。",  # said by a knower: nothing for the POV
        chapter=25,
        perspective="林风",
    )
    result = draft_check(book=demo, text=text)
    assert found(result, "secret_early") == [(5, "warning", "幽冥令")]
    assert found(result, "pov_knowledge") == [(6, "warning", "陆家遗孤")]
    leak = next(f for f in result["findings"] if f["kind"] == "secret_early")
    assert leak["evidence"]["file"].startswith("信息差/信息差-002")
    # the same chapter seen through a knower: no POV finding
    other = draft_check(book=demo, text=text.replace("perspective: 林风", "perspective: 陆白鹭"))
    assert found(other, "pov_knowledge") == []


def test_banned_words_counted_and_quote_style(demo):
    text = draft("他瞬间明白了，瞬间之后又莫名一笑。\n「走吧。」她说。", chapter=25)
    result = draft_check(book=demo, text=text)
    assert found(result, "banned_word") == [(4, "warning", "瞬间"), (4, "warning", "瞬间"), (4, "warning", "莫名")]
    assert [f["message"] for f in result["findings"] if f["term"] == "瞬间"] == [
        "禁用词「瞬间」（本章第 1/2 处）",
        "禁用词「瞬间」（本章第 2/2 处）",
    ]
    assert found(result, "quote_style") == [(5, "warning", "「」")]
    assert result["findings"][0]["evidence"]["file"] == "文风/基调.md"


def test_front_matter_threads_and_the_weak_hook_streak(demo):
    text = draft(
        "林风望着雾海。",
        chapter=25,
        hook_type="悬疑钩-弱",
        threads={"opens": [], "advances": ["伏笔-999", "伏笔-002"], "closes": ["悬念-002"]},
    )
    result = draft_check(book=demo, text=text)
    kinds = [(f["kind"], f["severity"], f["term"], f["line"]) for f in result["findings"]]
    assert ("thread_unknown", "error", "伏笔-999", 7) in kinds
    assert ("thread_closed", "error", "伏笔-002", 8) in kinds  # closed in 14
    assert ("thread_closed", "error", "悬念-002", 10) in kinds  # closed in 19
    assert ("weak_hook_streak", "warning", "hook_type", 3) in kinds  # 22, 23, 24 weak, and now 25
    assert result["counts"] == {"error": 3, "warning": 1, "info": 0, "waived": 0}


def test_a_thread_planned_to_end_here_that_is_not_closed(demo):
    result = draft_check(book=demo, text=draft("林风展开雾海图。", chapter=36))
    assert found(result, "thread_due") == [(1, "info", "伏笔-003")]
    closing = draft("林风展开雾海图。", chapter=36, threads={"closes": ["伏笔-003"]})
    assert found(draft_check(book=demo, text=closing), "thread_due") == []


def test_a_book_without_a_ladder_has_no_realm_findings(demo):
    demo.config = {k: v for k, v in demo.config.items() if k != "continuity"}
    demo.save(update_fields=["config"])
    result = draft_check(book=demo, text=draft("林风不过是炼气五层。", chapter=25))
    assert found(result, "realm_lower") == []


def test_draft_parse_with_the_stored_front_matter_is_the_same_draft():
    from continuity.draft import draft_parse

    text = '---\nchapter: 7\nperspective: 林风\nthreads:\n  closes: [T-1]\n---\n林风道：“走。”\n\n<entity-update id="c1"><set key="status" value="死亡"/></entity-update>\n他走了。\n'
    parsed = draft_parse(text)
    reused = draft_parse(text, front_matter=dict(parsed.front_matter))
    assert (reused.prose, reused.body_line, reused.chapter, reused.perspective, reused.closes) == (
        parsed.prose,
        7,
        7,
        "林风",
        ["T-1"],
    )
    assert reused.tag_ops == parsed.tag_ops and reused.front_matter_lines == parsed.front_matter_lines
