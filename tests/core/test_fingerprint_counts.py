"""The fingerprint's fast counts (numpy) equal their plain definitions: phrases as every four-character run
of Chinese characters inside a clause (``_phrases``), richness as the distinct characters of each window."""

import random

from core import fingerprint
from core.fingerprint import PHRASE_MIN, RICHNESS_WINDOW, fingerprint_compute


def _plain(body: str) -> tuple[dict[str, int], int]:
    phrases = fingerprint._phrases(body)
    return {p: n for p, n in phrases.items() if n >= PHRASE_MIN}, sum(phrases.values())


def test_phrase_counts_match_the_plain_scan_on_mixed_text():
    body = "他嘴角微微上扬。他嘴角微微上扬！她嘴角微微上扬……𠀀嘴角微微😀嘴角微微，嘴角微微a嘴角微微"
    assert fingerprint._phrase_counts(body) == _plain(body)
    assert fingerprint._phrase_counts(body)[0] == {"嘴角微微": 7, "角微微上": 3, "微微上扬": 3}
    assert fingerprint._phrase_counts("中文字") == ({}, 0)
    assert fingerprint._phrase_counts("") == ({}, 0)
    # a lone surrogate or a character outside the BMP breaks a phrase, as punctuation does
    assert fingerprint._phrase_counts("中文字\ud800符中文字符中文字符中文字符") == ({"中文字符": 3, "符中文字": 3}, 10)


def test_phrase_counts_and_richness_match_on_random_text():
    rnd = random.Random(7)
    alphabet = "林风剑。！？…，.“”「」 \n\u3000a1😀𠀀\ud800" + "".join(chr(c) for c in range(0x4E00, 0x4E10))
    for _ in range(200):
        body = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 2000)))
        assert fingerprint._phrase_counts(body) == _plain(body)
        cjk = "".join(fingerprint._CJK_RUN.findall(body))
        windows = len(cjk) // RICHNESS_WINDOW
        expected = sum(len(set(cjk[i * RICHNESS_WINDOW : (i + 1) * RICHNESS_WINDOW])) for i in range(windows))
        assert fingerprint._richness_types(cjk, windows) == expected
        lengths = [
            len(part) for part in fingerprint._SENTENCE_SPLIT.split(fingerprint._NOT_COUNTED.sub("", body)) if part
        ]
        assert fingerprint._sentence_lengths(body) == lengths
        assert fingerprint._sentence_sums(body) == (len(lengths), sum(lengths), sum(n * n for n in lengths))
        # the numpy path (no dot left) on the same text
        plain = body.replace(".", "")
        lengths = [
            len(part) for part in fingerprint._SENTENCE_SPLIT.split(fingerprint._NOT_COUNTED.sub("", plain)) if part
        ]
        assert fingerprint._sentence_sums(plain) == (len(lengths), sum(lengths), sum(n * n for n in lengths))


def test_phrase_top_is_the_sorted_head_of_the_phrase_counts():
    # ties (3 and 3) in text order, the highest count first; the repeats sum every kept phrase, not only the top
    body = "他嘴角微微上扬。他嘴角微微上扬！她嘴角微微上扬……𠀀嘴角微微😀嘴角微微，嘴角微微a嘴角微微"
    assert fingerprint._phrase_top(body) == ([("嘴角微微", 7), ("微微上扬", 3), ("角微微上", 3)], 13, 16)
    assert sum(fingerprint._phrases(body).values()) == 16
    assert fingerprint._phrase_top("") == ([], 0, 0)
    rnd = random.Random(11)
    alphabet = "林风剑。，" + "".join(chr(c) for c in range(0x4E00, 0x4E06))
    for _ in range(100):
        body = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 3000)))
        repeated, ngrams = fingerprint._phrase_counts(body)
        ordered = sorted(repeated.items(), key=lambda pn: (-pn[1], pn[0]))
        assert fingerprint._phrase_top(body) == (ordered[: fingerprint.PHRASE_TOP], sum(repeated.values()), ngrams)


def test_a_chapter_s_counts():
    counts = fingerprint_compute("林风拔剑。林风拔剑！林风拔剑？" * 2)
    assert (counts["phrase_ngrams"], counts["phrase_repeats"], counts["phrases"]) == (6, 6, {"林风拔剑": 6})
    assert (counts["sentences"], counts["sentence_lengths"], counts["sentence_length_sum"]) == (6, 6, 24)


def test_sentence_sums_count_code_points_between_end_marks():
    # 😀 and a lone surrogate are one character each, as len counts them; a comma does not end a sentence, an
    # ellipsis run ends one
    assert fingerprint._sentence_sums("林风😀，拔剑！\n\n\ud800走……好。") == (3, 5 + 2 + 1, 25 + 4 + 1)
    assert fingerprint._sentence_sums("") == (0, 0, 0)
    assert fingerprint._sentence_sums("。！？") == (0, 0, 0)
    # two dots are counted as characters, three end a sentence (the regex path)
    assert fingerprint._sentence_sums("林风..拔剑...走") == (2, 6 + 1, 36 + 1)
