"""Courtesy names (字) and compound surnames in the classical register (entities.discovery.courtesy,
collect._surnames_glue): each with the concrete names an original text gives."""

from entities.discovery import courtesy as C
from entities.discovery.collect import _surnames_glue
from entities.discovery.engine import discover, jieba_segment


def test_courtesy_pairs_read_the_owner_of_each_zi_sentence():
    text = (
        "河西有一人，姓萧名承，字景略，世居凉城。"
        "韩烈者，字伯威，河西人。石猛字元霸，使一柄大斧。"
        "此人乃琅琊人，复姓诸葛，名亮，字孔明。"
        "所可虑者，令狐峻一人而已。此人字子高，多谋善断。"
        "他写了一个字，又写了一个字。"
    )
    person = {"萧承", "景略", "韩烈", "伯威", "石猛", "元霸", "诸葛亮", "孔明", "令狐峻", "子高"}
    assert C.courtesy_pairs([(1, text)], person) == {
        ("萧承", "景略"): 1,
        ("韩烈", "伯威"): 1,
        ("石猛", "元霸"): 1,
        ("诸葛亮", "孔明"): 1,
        ("令狐峻", "子高"): 1,
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
