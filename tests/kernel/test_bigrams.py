"""kernel.bigrams: the one bigram tokenizer of both BM25 indexes (the library's and the memory's)."""

from kernel.bigrams import cjk_bigrams, text_bigrams
from memory.retrieval import text_terms
from storysystem.search import tokenize


def test_bigrams_of_a_run_and_a_lone_character():
    assert list(cjk_bigrams("断剑青岚")) == ["断剑", "剑青", "青岚"]
    assert list(cjk_bigrams("剑")) == ["剑"]


def test_text_bigrams_are_the_cjk_bigrams_then_the_ascii_words_lower_cased():
    assert text_bigrams("林风拾剑 OK，剑鸣x2") == ["林风", "风拾", "拾剑", "剑鸣", "ok", "x2"]
    assert text_bigrams("") == []


def test_both_indexes_share_the_bigrams_and_keep_their_own_terms():
    # the memory: exactly the kernel's terms (names come on top only when a name index is given)
    assert text_terms("林风拾剑 ok") == text_bigrams("林风拾剑 ok")
    # the library: the same bigrams, plus each short cell as a whole term, minus question-word bigrams
    bigrams = list(cjk_bigrams("退婚流怎么写"))
    assert bigrams == ["退婚", "婚流", "流怎", "怎么", "么写"]
    assert tokenize("退婚流怎么写") == ["退婚流怎么写", "退婚", "婚流", "流怎"]


def test_bigram_lines_give_each_text_its_joined_cjk_bigrams():
    from kernel.bigrams import CJK_RUN, bigram_lines

    def one_by_one(text: str) -> str:
        return " ".join(term for run in CJK_RUN.findall(text) for term in cjk_bigrams(run))

    texts = ["断剑青岚", "剑", "", "OK 林风，拾剑x2。一", "㐀\u9fff\uf900\ufaff\ufb00😀中文", "  中  ", "中a文"]
    assert bigram_lines(texts) == [
        "断剑 剑青 青岚",
        "剑",
        "",
        "林风 拾剑 一",
        "㐀\u9fff \u9fff\uf900 \uf900\ufaff 中文",
        "中",
        "中 文",
    ]
    assert bigram_lines(texts) == [one_by_one(t) for t in texts]
    # a text holding the batch's separator is still cut right (the one-by-one path)
    assert bigram_lines(["中\x00文", "林风"]) == ["中 文", "林风"]
    assert bigram_lines([]) == []
