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
