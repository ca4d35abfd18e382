"""Courtesy names (字) and compound surnames in the classical register (entities.discovery.courtesy,
collect._surnames_glue): each with the concrete names an original text gives."""

from entities.discovery import courtesy as C
from entities.discovery import textstats as T
from entities.discovery.collect import _collect, _surnames_glue
from entities.discovery.engine import discover, jieba_segment


def test_courtesy_pairs_read_the_owner_of_each_zi_sentence():
    text = (
        "河西有一人，姓萧名承，字景略，世居凉城。"
        "韩烈者，字伯威，河西人。石猛字元霸，使一柄大斧。"
        "此人乃琅琊人，复姓诸葛，名亮，字孔明。"
        "所可虑者，令狐峻一人而已。此人字子高，多谋善断。"
        "他写了一个字，又写了一个字。"
        "那人姓关名羽，字长生，后改云长，河东人也。"
    )
    person = {"关羽", "云长", "萧承", "景略", "韩烈", "伯威", "石猛", "元霸", "诸葛亮", "孔明", "令狐峻", "子高"}
    assert C.courtesy_pairs([(1, text)], person) == {
        ("萧承", "景略"): 1,
        ("韩烈", "伯威"): 1,
        ("石猛", "元霸"): 1,
        ("诸葛亮", "孔明"): 1,
        ("令狐峻", "子高"): 1,
        ("关羽", "云长"): 1,  # 长生 is no person word of this book: only the name it changed to
    }


def test_courtesy_pairs_need_both_names_to_be_persons():
    # 景略 is no person word of the book here; 十字 is no naming.
    assert C.courtesy_pairs([(1, "姓萧名承，字景略，世居凉城。路口有十字，字迹模糊。")], {"萧承"}) == {}


def test_a_compound_surname_cut_off_its_given_name_is_glued_back():
    # jieba: 令狐/nr + 峻/ag, 钟离/n + 彦/g; the compound surname is the language's, like the single ones.
    assert _surnames_glue(jieba_segment("令狐峻叹曰"))[0] == ("令狐峻", "nr")
    assert _surnames_glue(jieba_segment("钟离彦笑曰"))[0] == ("钟离彦", "nr")
    # A one-character function word after it is no given name.
    assert _surnames_glue([("令狐", "nr"), ("曰", "vg")]) == [("令狐", "nr"), ("曰", "vg")]


def test_a_zi_sentence_after_xing_ming_joins_the_courtesy_name_in_discovery():
    intro = ["河西有一人，姓萧名承，字景略，世居凉城。韩烈者，字伯威，河西人也。"]
    lines = [
        "景略曰：“吾当往之。”伯威曰：“主公勿忧。”",
        "萧承至城下，韩烈随之。萧承曰：“可战矣。”",
        "韩烈大怒，拍马而出。景略笑而不答。",
    ] * 6
    chapters = [(k + 1, "\n".join((intro if k == 0 else []) + lines[k::3])) for k in range(3)]
    proposals = discover(chapters, min_count=5, types=["角色"])
    owner = {n: p.name for p in proposals for n in p.names()}
    # (jieba glues 萧承至 in so small a text; the proposal holding 萧承 is his, whatever its head.)
    assert owner["景略"] == owner["萧承"]
    assert owner["伯威"] == owner["韩烈"] == "韩烈"
    assert [p.names() for p in proposals if p.name == "韩烈"] == [["韩烈", "伯威"]]


def test_a_name_the_segmenter_cuts_short_takes_its_next_character_back():
    # jieba: 呼延/nr + 灼/vg (or 灼挺/z); the book writes 呼延 with 灼 after it every time.
    verbs = "挺拔走看骂笑追拿跑打"
    text = "\n".join(f"，呼延灼{v}了。宋江{v}了，李逵也{v}了。" for v in verbs)
    st = T.text_stats([(1, text), (2, text)], 3)
    edges = T.Edges(left=frozenset(), right=frozenset("道"))
    # 李逵 is always followed by 也 here too, but 也 is an adverb: the next word, not his name's end.
    tags = {"灼": "vg", "也": "d"}
    assert T.cut_names(st, ["呼延", "宋江", "李逵"], edges, ["道"], {}, tags) == {"呼延": "灼"}
    assert T.cut_names(st, ["呼延"], edges, ["道"], {"呼延灼": 5}, tags) == {}  # a dictionary word
    tokens = [("呼延", "nr"), ("灼挺", "z"), ("鞭", "n"), ("呼延", "nr"), ("灼", "vg"), ("道", "q")]
    assert T.token_repair(tokens, {}, {}, frozenset(), {"呼延": "灼"}) == [
        ("呼延灼", "nr"),
        ("挺", "z"),
        ("鞭", "n"),
        ("呼延灼", "nr"),
        ("道", "q"),
    ]


def test_a_verb_glued_onto_a_name_written_far_more_often_alone_is_cut_off():
    # 闻天子/nr (上闻天子) beside 天子 alone, 天子 a name of the book here; 花和尚 stays (和尚 is none); 关云长 beside 关羽 / 关平 / 关兴: 关 begins names, a surname here
    # (but not when those are rare: below min-count they are no evidence).
    text = "\n".join(
        ["天子大喜。天子曰：“善。”和尚来了。"] * 6 + ["上闻天子。"] + ["关羽、关平、关兴与云长。云长曰：“可。”"] * 5
    )
    st = T.text_stats([(1, text)], 3)
    words = {"闻天子": 1, "关羽": 5, "关平": 5, "关兴": 5, "关云长": 1, "花和尚": 1}
    tags = {"闻": "v", "关": "v", "花": "v"}
    names = ["天子", "云长", "关羽"]
    assert T.verb_glued(st, words, tags, [], 3, names) == {"闻天子": "天子"}
    assert T.verb_glued(st, words, tags, ["关"], 3, names) == {"闻天子": "天子"}
    rare = {"闻天子": 1, "关羽": 1, "关平": 1, "关兴": 1, "关云长": 1}
    assert T.verb_glued(st, rare, tags, [], 3, names) == {"闻天子": "天子", "关云长": "云长"}
    assert T.verb_glued(st, {"闻天子": 1}, {"闻": "nr"}, [], 3, names) == {}  # no verb first


def test_the_person_heading_a_clause_speaks_through_a_later_yue():
    # The classical register puts a predicate between the subject and 曰: 萧承 speaks, not 陆澄 (addressee).
    text = "萧承顾谓陆澄曰：“善。”\n韩烈大喜曰：“可。”\n使者曰：“萧承顾谓陆澄曰：‘善。’”"
    st = _collect([(1, text)], jieba_segment)
    assert st.speaker["萧承"] == 1  # the narrator's line; the same words inside a quote are not counted
    assert st.speaker["陆澄"] == 0
    assert st.speaker["韩烈"] == 1
