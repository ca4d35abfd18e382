"""Style fingerprints (seed 002 §1.5): sentence-length variance, vocabulary richness over fixed
windows, common phrase frequency, the baseline flag; deterministic; used by the drift report."""

import random
import statistics

import pytest

from bookfiles.rebuilder import book_dump, book_rebuild, book_sync, chapter_finalize
from core import selectors
from core.fingerprint import RICHNESS_WINDOW, fingerprint_compute, fingerprints_sum
from core.models import Book, Chapter, Fingerprint
from tests.conftest import CORPUS
from tests.factories import book_folder_make, book_write, chapter_text

# 300 common Chinese characters: the alphabet of the synthetic prose below.
ALPHABET = "".join(chr(0x4E00 + i * 37) for i in range(300))


def prose(*, seed: int, sentences: int) -> str:
    """Stationary synthetic prose: every window of it is drawn from the same distribution."""
    rng = random.Random(seed)
    return "".join(
        "".join(rng.choice(ALPHABET) for _ in range(rng.randint(4, 30))) + rng.choice("。！？")
        for _ in range(sentences)
    )


def test_same_text_same_numbers():
    body = prose(seed=7, sentences=400) + "\n“倒吸一口凉气。”他倒吸一口凉气，又倒吸一口凉气。"
    first = fingerprint_compute(body)
    assert fingerprint_compute(body) == first
    assert fingerprint_compute(str(body)) == first
    # the common phrases are ordered by count then by the phrase: no set or dict order leaks in
    assert list(first["phrases"])[:3] == ["一口凉气", "倒吸一口", "吸一口凉"]


def test_sentence_length_variance_of_a_range_is_exact():
    bodies = [prose(seed=s, sentences=60) for s in (1, 2, 3)]
    rows = [fingerprint_compute(b) for b in bodies]
    lengths = [len(s) for b in bodies for s in b.replace("！", "。").replace("？", "。").split("。") if s]
    derived = selectors.fingerprint_features_derive(totals=fingerprints_sum(rows))
    assert rows[0]["sentence_lengths"] + rows[1]["sentence_lengths"] + rows[2]["sentence_lengths"] == 180
    assert derived["sentence_length_variance"] == round(statistics.pvariance(lengths), 4)
    flat = selectors.fingerprint_features_derive(totals=fingerprint_compute("一二三四。一二三四。一二三四。"))
    assert flat["sentence_length_variance"] == 0.0


def test_vocabulary_richness_does_not_drift_with_length():
    short, long = prose(seed=11, sentences=200), prose(seed=11, sentences=2000)
    fs, fl = fingerprint_compute(short), fingerprint_compute(long)
    assert (fs["richness_windows"], fl["richness_windows"]) == (
        fs["cjk_chars"] // RICHNESS_WINDOW,
        fl["cjk_chars"] // RICHNESS_WINDOW,
    )
    rs = selectors.fingerprint_features_derive(totals=fs)["vocabulary_richness"]
    rl = selectors.fingerprint_features_derive(totals=fl)["vocabulary_richness"]
    assert abs(rs - rl) < 0.01
    # while a plain type/token ratio over the whole text falls as it grows
    plain = [len(set(t)) / len(t) for t in (short, long)]
    assert plain[1] < plain[0] / 5
    # a text shorter than one window has no richness (not a misleading 1.0)
    assert "vocabulary_richness" not in selectors.fingerprint_features_derive(totals=fingerprint_compute("短短一句。"))


def test_vocabulary_richness_on_the_classic():
    if not (CORPUS / "xiyouji.txt").is_file():
        pytest.skip(f"西游记 corpus not found at {CORPUS}")
    text = (CORPUS / "xiyouji.txt").read_text(encoding="utf-8")
    small, big = fingerprint_compute(text[:20_000]), fingerprint_compute(text[:200_000])
    rs = selectors.fingerprint_features_derive(totals=small)["vocabulary_richness"]
    rb = selectors.fingerprint_features_derive(totals=big)["vocabulary_richness"]
    assert 0.5 < rb < 0.8 and abs(rs - rb) < 0.05
    assert list(big["phrases"].items())[:3] == [("齐天大圣", 46), ("行者笑道", 44), ("有诗为证", 30)]


def test_common_phrases_and_their_frequency():
    body = "他倒吸一口凉气。她也倒吸一口凉气！众人倒吸一口凉气？林风笑了。"
    f = fingerprint_compute(body)
    assert f["phrases"] == {"一口凉气": 3, "倒吸一口": 3, "吸一口凉": 3}
    assert f["phrase_repeats"] == 9
    assert f["phrase_ngrams"] == 4 + 5 + 5 + 1  # 他倒吸一口凉气 · 她也倒吸一口凉气 · 众人倒吸一口凉气 · 林风笑了
    ratio = selectors.fingerprint_features_derive(totals=f)["common_phrase_ratio"]
    assert ratio == round(9 / 15, 4)
    # a range sums the phrases of its chapters
    total = fingerprints_sum([f, fingerprint_compute("倒吸一口凉气倒吸一口凉气倒吸一口凉气")])
    assert total["phrases"]["倒吸一口"] == 6


@pytest.mark.django_db
def test_the_drift_report_uses_the_new_metrics(api):
    book = Book.objects.create(slug="fp", title="指纹", root="/tmp/fp", style_baseline_start=1, style_baseline_end=2)
    bodies = {
        1: prose(seed=1, sentences=150),
        2: prose(seed=2, sentences=150),
        # the current chapters: one repeated tic and uniform sentences
        3: "他嘴角微微上扬。" * 50,
        4: "她嘴角微微上扬。" * 50,
    }
    for n, body in bodies.items():
        Chapter.objects.create(book=book, number=n)
        Fingerprint.objects.create(
            book=book, start_chapter=n, end_chapter=n, features=fingerprint_compute(body), is_baseline=n <= 2
        )
    data = selectors.style_drift(book=book)
    by_name = {f["feature"]: f for f in data["features"]}
    assert by_name["sentence_length_variance"]["current"] == 0.0
    assert by_name["sentence_length_variance"]["change"] == -1.0 and by_name["sentence_length_variance"]["drifted"]
    assert by_name["common_phrase_ratio"]["baseline"] == 0.0 and by_name["common_phrase_ratio"]["change"] is None
    assert by_name["common_phrase_ratio"]["current"] == 1.0
    # one window of 300 per current chapter, 6 distinct characters in each (他/她 嘴角微上扬)
    assert by_name["vocabulary_richness"]["current"] == 0.02 and by_name["vocabulary_richness"]["drifted"]
    assert fingerprint_compute("短" * 299)["richness_windows"] == 0
    assert data["common_phrases"]["baseline"] == []
    per_10k = round(100 * 10_000 / 700, 2)  # 100 uses in 700 Chinese characters
    assert data["common_phrases"]["current"][:4] == [
        {"phrase": "嘴角微微", "count": 100, "per_10k": per_10k},
        {"phrase": "微微上扬", "count": 100, "per_10k": per_10k},
        {"phrase": "角微微上", "count": 100, "per_10k": per_10k},
        {"phrase": "他嘴角微", "count": 50, "per_10k": 714.29},
    ]
    assert data["common_phrases"]["new"] == ["嘴角微微", "微微上扬", "角微微上", "他嘴角微", "她嘴角微"]
    rest = api.get("/api/books/fp/reports/style-drift").json()
    assert rest["common_phrases"] == data["common_phrases"]
    assert [f["feature"] for f in rest["features"]] == [f["feature"] for f in data["features"]]


@pytest.mark.django_db
def test_the_baseline_flag_follows_book_yaml(tmp_path):
    root = book_folder_make(tmp_path / "mini")  # style_baseline: [1, 2]
    book_rebuild(root=root)
    flags = dict(Fingerprint.objects.filter(book__slug="mini").values_list("start_chapter", "is_baseline"))
    assert flags == {1: True, 2: True, 3: False}
    book_write(root, "定稿/正文/第二卷/第0004章.md", chapter_text(title="问剑", body="林风问剑！"))
    chapter_finalize(book=Book.objects.get(slug="mini"), number=4)
    assert Fingerprint.objects.get(book__slug="mini", start_chapter=4).is_baseline is False
    yaml = (root / "book.yaml").read_text(encoding="utf-8").replace("style_baseline: [1, 2]", "style_baseline: [2, 4]")
    book_write(root, "book.yaml", yaml)
    book_sync(book=Book.objects.get(slug="mini"))
    flags = dict(Fingerprint.objects.filter(book__slug="mini").values_list("start_chapter", "is_baseline"))
    assert flags == {1: False, 2: True, 3: True, 4: True}
    assert '"is_baseline": true' in book_dump(book=Book.objects.get(slug="mini"))
