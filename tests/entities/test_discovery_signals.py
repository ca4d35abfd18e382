"""The signal functions of discovery read from the book's own text (entities.discovery.textstats) and
its bounds on hostile text (entities.discovery.bounds): each with concrete values that can fail."""

import math
import random

import pytest

from bookfiles.rebuilder import book_rebuild
from entities.discovery import bounds as B
from entities.discovery import textstats as T
from entities.discovery.engine import discover, jieba_lexicon, jieba_segment, jieba_tags
from entities.discovery.services import _bounds_report
from tests.entities.test_discovery import _book_folder, synthetic_chapters

# 袭人: a speaker's name no dictionary knows; jieba cuts it 袭/v + 人/n.
XIREN = """袭人道：“你去吧。”
宝玉见袭人来了，心中欢喜。
麝月拉着袭人走了。
晴雯对袭人说了几句。
袭人笑了一笑。
袭人便去了。
只有袭人在屋里。
袭人又问麝月。
麝月道：“好。”
晴雯道：“来了。”
这一日天气晴好，园中花木繁盛，丫鬟们各自忙碌，老嬷嬷坐在廊下晒太阳。"""
# A classical register: 曰 is the speech verb, and the segmenter glues it onto names it does not know.
CLASSICAL = """玄德曰：“吾当往之。”
孔明曰：“不可。”
云长曰：“兄长勿忧。”
玄德大喜，孔明笑而不答，云长怒目而视。
众人皆曰：“善。”
二人同往，玄德与孔明对坐。"""


def chapters(text: str, n: int = 3) -> list[tuple[int, str]]:
    return [(i + 1, text) for i in range(n)]


def test_ngram_counts_and_contexts():
    st = T.text_stats(chapters(XIREN), 5)
    assert st.gram["袭人"] == 24 and st.chapters["袭人"] == {1, 2, 3}
    assert st.right["袭人"]["道"] == 3 and st.left["袭人"][T.BOUNDARY] == 12
    assert T.distinct_sides(st.left["袭人"]) == 4 + 12  # 见 着 对 有, and each boundary its own
    # 袭 and 人 occur only together: PMI = ln(total / 24); eight right neighbours, three times each
    assert st.total == 291 and T.cohesion(st, "袭人") == pytest.approx(math.log(291 / 24))
    assert T.branching_entropy(st.right["袭人"]) == pytest.approx(3.0)


def test_speech_verbs_are_read_before_quotes():
    assert set(T.speech_verbs(chapters(CLASSICAL))) == {"曰"}
    assert set(T.speech_verbs(chapters(XIREN))) == {"道"}


def test_edges_learned_and_a_glued_name_cut():
    st = T.text_stats(chapters(CLASSICAL), 3)
    speech = T.speech_verbs(chapters(CLASSICAL))
    edges = T.learn_edges(st, ["玄德", "孔明", "云长"], {"玄德曰": 3, "孔明曰": 3, "云长曰": 3}, speech)
    assert "曰" in edges.right
    assert T.glued(st, edges, "玄德曰", {"玄德"}) == "玄德"
    assert T.glued(st, edges, "玄德", {"玄德"}) == ""
    # 玄德曰 / 孔明曰 → name + speech verb; 袭 + 人 → one person token
    tokens = T.token_repair(
        [("玄德曰", "nr"), ("：", "x"), ("袭", "v"), ("人", "n"), ("道", "v")], {"玄德曰": "玄德"}, {"袭人": 1}
    )
    assert tokens == [("玄德", "nr"), ("曰", "v"), ("：", "x"), ("袭人", "nr"), ("道", "v")]
    assert T.token_repair([("向宝玉", "nr")], {"向宝玉": "宝玉"}, {}) == [("向", "p"), ("宝玉", "nr")]


FILLER = "话说天下大势分久必合合久必分周末七国分争并入于秦及秦灭之后楚汉分争又并入于汉。" * 10


def test_loose_tells_a_function_word_from_a_surname():
    text = chapters(
        "沙悟净道：“是。”\n悟净来了。\n向悟净说。\n向他说。\n向前走。\n向东去。\n向西行。\n沙悟净笑。" + FILLER, 6
    )
    st = T.text_stats(text, 3)
    assert not T.loose(st, "沙", "悟净", "left")  # 悟净 is mostly written after 沙: one name
    assert T.loose(st, "向", "悟净", "left")  # 向 goes before anything


def test_a_name_jieba_never_emits_whole_is_a_candidate():
    st = T.text_stats(chapters(XIREN), 5)
    speech = T.speech_verbs(chapters(XIREN))
    found = T.name_candidates(st, T.Edges(), speech, jieba_lexicon(), 5, jieba_tags())
    assert found == {"袭人": 0.125}
    assert all(w != "袭人" for w, _ in jieba_segment(XIREN))  # the segmenter alone never has it


def test_group_words():
    text = chapters("众人都笑了。\n二人同去。\n三人同行。\n两人对坐。\n一人独坐。\n师徒们都来了。\n宋江大喜。", 4)
    st = T.text_stats(text, 3)
    assert T.group_words(st, ["众人", "二人", "三人", "宋江", "师徒"]) == {"众人", "二人", "三人"}


def test_group_words_a_leader_followed_by_deng_is_no_group():
    # 宋江等 ("宋江 and the others"): 等 follows a leader's name; 们 / 都 follow a group.
    text = chapters("宋江等众将都来了。\n宋江大喜。\n宋江等商议。\n师徒们都来了。\n师徒们走了。\n师徒三人。", 5)
    st = T.text_stats(text, 3)
    assert st.gram["宋江"] == 15 and st.right["宋江"]["等"] == 10
    assert T.group_words(st, ["宋江", "师徒"]) == {"师徒"}


def test_engine_finds_the_name_and_cuts_the_glued_form():
    found = {p.name for p in discover(chapters(XIREN, 4), min_count=5, types=["角色"])}
    assert "袭人" in found
    names = {n for p in discover(chapters(CLASSICAL, 6), min_count=5, types=["角色"]) for n in p.names()}
    assert not any(n.endswith("曰") for n in names)
    assert "众人" not in names


# --- bounds ----------------------------------------------------------------------------------


def test_pieces_cut_after_a_sentence_end():
    line = ("甲" * 900 + "。") * 5
    parts = B.pieces(line, 2000)
    assert [len(p) for p in parts] == [1802, 1802, 901]
    assert "".join(parts) == line
    assert [len(p) for p in B.pieces("乙" * 4500, 2000)] == [2000, 2000, 500]


def test_chapters_bounded_states_what_was_left_out():
    out, note = B.chapters_bounded([(1, "甲" * 60), (2, "乙" * 60), (3, "丙" * 60)], 100)
    assert out == [(1, "甲" * 60), (2, "乙" * 40)]
    assert note == {"chars": 180, "read": 100, "truncated": True}


def test_a_chapter_is_read_up_to_its_own_cap_cut_after_a_sentence_end():
    body = ("甲" * 99 + "。") * 50  # 5,000 characters, a sentence end every 100
    out, note = B.chapters_bounded([(1, body), (2, "乙" * 60)], 100_000, chapter_chars=3050)
    assert [len(b) for _, b in out] == [3000, 60]  # cut after the last sentence end before 3,050
    assert note == {"chars": 5060, "read": 3060, "truncated": True, "cut": [(1, 5000, 3000)]}
    # A chapter under the cap is read whole: no "cut" entry.
    assert B.chapters_bounded([(1, body)], 100_000, chapter_chars=5000)[1] == {
        "chars": 5000,
        "read": 5000,
        "truncated": False,
    }


def test_the_report_says_which_chapter_was_cut():
    report = _bounds_report({"chars": 5060, "read": 3060, "truncated": True, "cut": [(1, 5000, 3000)]}, 1_000_000)
    assert report["cut"] == [{"chapter": 1, "chars": 5000, "read": 3000}]
    assert report["note"] == f"第 1 章共 5000 字，超过单章上限 {B.MAX_CHAPTER_CHARS} 字：只读了前 3000 字"
    both = _bounds_report({"chars": 9000, "read": 4000, "truncated": True, "cut": [(1, 5000, 3000)]}, 4000)
    assert both["note"].endswith("超过本次上限 4000 字：只读了前 4000 字（命令行 manage.py discover 的上限更高）")


def test_random_cjk_is_segmented_by_the_dictionary_alone():
    rng = random.Random(7)
    noise = "".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(20000))
    assert B.lexical_share(noise, jieba_lexicon()) < B.LEXICAL_FLOOR
    assert B.lexical_share(XIREN * 10, jieba_lexicon()) > 0.15
    report: dict = {}
    proposals = discover([(1, noise), (2, XIREN)], min_count=5, types=["角色"], bounds=report)
    assert report["unlexical"] == 10 and report["truncated"] is False
    assert proposals == [] or all(len(p.name) <= 6 for p in proposals)


def test_a_long_line_is_read_in_pieces_and_truncated():
    line = (XIREN.replace("\n", "")) * 300  # one paragraph of ~30,000 characters
    report: dict = {}
    proposals = discover([(1, line), (2, line)], min_count=5, types=["角色"], bounds=report, max_chars=40000)
    assert report == {"chars": 2 * len(line), "read": 40000, "truncated": True}
    assert "袭人" in {p.name for p in proposals}


@pytest.mark.django_db
def test_rest_discover_is_bounded_and_says_so(api, tmp_path, monkeypatch):
    assert book_rebuild(root=_book_folder(tmp_path / "synth", synthetic_chapters()))["ok"]
    monkeypatch.setattr("entities.api.REST_MAX_CHARS", 1000)
    response = api.post("/api/books/synth/discover", data={"min_count": 3}, content_type="application/json")
    assert response.status_code == 200
    bounds = response.json()["bounds"]
    assert bounds["read"] == 1000 and bounds["chars"] > 1000 and "只读了前 1000 字" in bounds["note"]


def test_a_sound_alike_is_never_merged_but_kept_in_the_low_band():
    # 张仪 sounds like 张翼 (zhangyi) and is five times rarer: the old pinyin rule merged them (张翼's
    # proposal held 张仪). Different characters of one sound are two names: 张仪 stays its own proposal,
    # held under the low band (< 0.5) with the link as its reason.
    lines = ["张翼领兵出城，与魏兵交战。张翼曰：“今日必胜。”众军皆喜。"] * 30
    lines += ["张仪游说诸侯，诸侯皆从。张仪曰：“合纵不可久也。”"] * 5
    chapters = [(k + 1, "\n".join(lines[k::3])) for k in range(3)]
    by_name = {p.name: p for p in discover(chapters, min_count=5, types=["角色"])}
    assert by_name["张翼"].names() == ["张翼"]
    assert by_name["张仪"].confidence == 0.45
    assert by_name["张仪"].uncertain == "可能与「张翼」是同一人：与「张翼」同音（拼音 zhangyi）"
    assert by_name["张仪"].as_dict()["evidence"]["uncertain"] == by_name["张仪"].uncertain
    assert "uncertain" not in by_name["张翼"].as_dict()["evidence"]


def test_a_courtesy_name_introduced_by_zi_joins_its_person():
    # Said once, as classical novels do (关羽，字云长): one sentence is enough for 字.
    intro = ["刘备，字玄德，涿郡人也。关羽，字云长，河东人也。"]
    lines = ["玄德曰：“吾当往之。”云长曰：“兄长勿忧。”二人遂行。", "刘备引兵至城下，关羽随之。刘备曰：“可战矣。”"] * 12
    chapters = [(k + 1, "\n".join((intro if k == 0 else []) + lines[k::3])) for k in range(3)]
    by_name = {p.name: p for p in discover(chapters, min_count=5, types=["角色"])}
    assert by_name["关羽"].names() == ["关羽", "云长"]
    assert by_name["关羽"].aliases[0].why == "「关羽，字云长」（表字句式 1 次）"
    assert "云长" not in by_name  # no proposal of its own


def test_agency_a_subject_of_many_verbs_against_a_noun():
    # 张清 heads every clause and does many different things; 言语 follows its verb and is followed by 。 only.
    verbs = "挺拔走看骂笑追拿跑打逃杀喝回叫望"
    text = "\n".join(f"，张清{v}了。他不言语。" for v in verbs)
    st = T.text_stats(chapters(text, 2), 3)
    assert st.gram["张清"] == 32 and st.left["张清"][T.BOUNDARY] == 32
    assert len(st.right["张清"]) == 16
    out = T.agency(st, ["张清", "言语", "无此词"])
    assert out == {"张清": 1.0, "言语": 0.0}


def test_agency_half_the_variety_is_half_the_agency():
    text = "\n".join(f"，琼英{v}了。" for v in "挺拔走看骂笑追") + "\n" + "\n".join("她见琼英来了。" for _ in range(7))
    st = T.text_stats(chapters(text, 2), 3)
    # 14 of 28 uses head a clause (0.5 → full), 8 different characters after it (8 / 15)
    assert T.agency(st, ["琼英"]) == {"琼英": round(8 / 15, 3)}


def test_voice_a_silent_subject_weighs_by_its_agency_above_a_noun():
    from entities.discovery.links import _voice
    from entities.discovery.vocab import Proposal

    def p(speaker: int, agency_pct: int) -> Proposal:
        signals = {"speaker": speaker, "named": 0, "agency_pct": agency_pct}
        return Proposal(type="角色", name="某", count=100, first_chapter=1, chapters=5, confidence=0.9, signals=signals)

    assert _voice(p(5, 0)) == 1.0  # speaks in 5 % of its uses: full voice
    # Never speaks, heads its clauses with many verbs (a warrior who fights more than he talks): as a
    # speaker since session 11 (0.73 before, × 0.7); half the agency, about half the voice.
    assert round(_voice(p(0, 100)), 3) == 1.0
    assert round(_voice(p(0, 60)), 3) == 0.64  # 0.1 + 0.9 × 0.6
    assert round(_voice(p(0, 0)), 3) == 0.1  # neither: a noun jieba tagged as a name
    assert round(_voice(p(1, 10)), 3) == 0.28  # speech (1/5) above its agency (0.07)


# --- given names that are ordinary words of the dictionary -----------------------------------

# 觉民 is a verb of jieba's dictionary and 淑贞 no name to it; the book shows both as people of the 沈 family.
SAGA = """沈德昌坐在堂屋里喝茶。大儿子沈觉民站在门口，沈淑贞端着点心进来。
觉民低着头，半天没说话。淑贞放下点心，看了他一眼。
觉民说：“爹，我想去上海念书。”淑贞吓了一跳。
沈德昌把茶碗一放，觉民便不敢再说。淑贞笑了笑，没有作声。
淑贞拉着觉民出了门，觉民回头望了一眼。淑贞替他理了理衣领。
第二天，觉民收拾了行李，淑贞送他到码头。淑贞哭了，觉民也哭了。
德昌站在窗前，看着觉民的背影。淑贞在一旁抹泪，淑贞又叹了口气。
觉民写信回来，淑贞读给老太太听。淑贞每天都去码头等船，觉民却没有回来。
回马望北而走，一匹马飞报军情。马飞报到城下，马飞报又去。"""


def test_given_names_that_are_dictionary_words_are_found_from_the_book():
    st = T.text_stats(chapters(SAGA), 5)
    full_forms = {"沈德昌": 6, "沈淑贞": 3}  # the person-tagged tokens (jieba cuts 沈觉民 as 沈 + 觉民/v)
    lexicon, tags = jieba_lexicon(), jieba_tags()
    assert st.left["觉民"]["沈"] == 3 and tags.get("觉民") == "v"
    found = T.given_names(st, surnames="沈马", full_forms=full_forms, lexicon=lexicon, tags=tags, min_count=5)
    assert found == {"淑贞", "觉民"}  # 德昌 acts too little here (agency 0.13); 飞报 follows no family's surname
    # after two surnames a word is a title (唐御弟, 王御弟), not one person's given name
    two = T.given_names(
        st, surnames="沈马王", full_forms=full_forms | {"王淑贞": 3}, lexicon=lexicon, tags=tags, min_count=5
    )
    assert two == {"觉民"}
    # a surname of the book begins person tokens in ≥ 30 % of its uses: 沈 in 3 of 12 is none
    assert T.given_names(st, surnames="沈", full_forms={"沈淑贞": 3}, lexicon=lexicon, tags=tags, min_count=5) == set()


def test_engine_proposes_a_given_name_the_dictionary_has_as_a_verb():
    names = {n for p in discover(chapters(SAGA, 4), min_count=5, types=["角色"]) for n in p.names()}
    assert "觉民" in names and "淑贞" in names
