"""Style fingerprints: raw counts per chapter, so any chapter range aggregates exactly by summing
(ratios such as dialogue share, the sentence-length variance or the vocabulary richness are
computed at read time). Keys: docs/book-format.md, "Fingerprints".

Deterministic: the same body gives the same counts (no clock, no randomness, ties of the common
phrases broken by the phrase itself)."""

import operator
import re
from collections import Counter

FEATURE_KEYS = (
    "chars",
    "cjk_chars",
    "sentences",
    "paragraphs",
    "dialogue_chars",
    "exclamations",
    "questions",
    "ellipses",
    "commas",
    # sentence-length variance = sentence_length_sq / n − (sentence_length_sum / n)², n = sentence_lengths
    "sentence_lengths",
    "sentence_length_sum",
    "sentence_length_sq",
    # vocabulary richness = richness_types / (richness_windows × RICHNESS_WINDOW)
    "richness_windows",
    "richness_types",
    # common phrase frequency = phrase_repeats / phrase_ngrams
    "phrase_ngrams",
    "phrase_repeats",
)

# Vocabulary richness is the mean type/token ratio of consecutive, non-overlapping windows of this
# many Chinese characters (within a chapter; the last partial window is left out). A plain
# type/token ratio falls as a text grows; over fixed windows it does not drift with length.
RICHNESS_WINDOW = 300
# A "phrase" is a run of four Chinese characters inside one clause (never across punctuation); a
# chapter's common phrases are those it uses at least PHRASE_MIN times.
PHRASE_SIZE = 4
PHRASE_MIN = 3
PHRASE_TOP = 20  # the common phrases kept per chapter (``phrases``), most frequent first

# Runs, not single characters: the regex engine is much faster returning a few long matches.
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# What a sentence's length does not count: whitespace (but line breaks, which end a sentence) and
# punctuation other than the end marks; one C-level substitution for the whole body.
_NOT_COUNTED_MARKS = r"[ \t\r\u3000，、；：“”‘’「」『』（）《》〈〉【】—–\-·,;:'\"()\[\]<>~～*]+"
_NOT_COUNTED = re.compile(_NOT_COUNTED_MARKS + r"|(?<!\.)\.(?!\.)")
# The same for a body without a full stop: without the alternation the scan is ~30 % faster.
_NOT_COUNTED_NO_DOT = re.compile(_NOT_COUNTED_MARKS)
# The Chinese characters of _CJK_RUN as (first, last) code points; all in the BMP, so one UTF-16 unit each.
_CJK_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
_SENTENCE_END = re.compile(r"[。！？!?…]+")
_SENTENCE_SPLIT = re.compile(r"[。！？!?…\n]+|\.{3,}")
# Every four-character run of Chinese characters, overlapping, in one C-level scan.
_PHRASE = re.compile(rf"(?=([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{{{PHRASE_SIZE}}}))")
_DOTS = re.compile(r"\.{3,}")
_DIALOGUE = (("“", re.compile(r"“([^”]*)”")), ("「", re.compile(r"「([^」]*)」")))


def _runs_of(text: str, char: str) -> int:
    """How many maximal runs of ``char`` the text has (``……`` is one run), without a regex scan."""
    parts = text.split(char)
    if len(parts) == 1:
        return 0
    return len(parts) - 1 - parts[1:-1].count("")


def _sentence_lengths(body: str) -> list[int]:
    # A sentence ends at an end mark or a line break; its length counts its characters without
    # whitespace and punctuation, so a closing quote is not a sentence of its own.
    not_counted = _NOT_COUNTED if "." in body else _NOT_COUNTED_NO_DOT
    return list(filter(None, map(len, _SENTENCE_SPLIT.split(not_counted.sub("", body)))))


_SENTENCE_ENDS = tuple(ord(c) for c in "。！？!?…\n")  # _SENTENCE_SPLIT's single characters


def _sentence_sums(body: str) -> tuple[int, int, int]:
    """(how many, the sum, the sum of squares) of ``_sentence_lengths``. Without a dot left (``...`` ends a
    sentence too: the regex then splits), the lengths are the runs between the end marks, found in numpy
    rather than by one string per sentence (~0.2 s of a 3,000-chapter rebuild)."""
    import numpy as np  # noqa: PLC0415 — see _units

    not_counted = _NOT_COUNTED if "." in body else _NOT_COUNTED_NO_DOT
    kept = not_counted.sub("", body)
    if "." in kept:
        lengths = list(filter(None, map(len, _SENTENCE_SPLIT.split(kept))))
        return len(lengths), sum(lengths), sum(map(operator.mul, lengths, lengths))
    # one code point per character (len's unit), a lone surrogate included
    codes = np.frombuffer(kept.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    ends = np.zeros(codes.size, dtype=bool)
    for code in _SENTENCE_ENDS:
        ends |= codes == code
    bounds = np.concatenate(([-1], np.flatnonzero(ends), [codes.size]))
    lengths = np.diff(bounds) - 1
    lengths = lengths[lengths > 0]
    return int(lengths.size), int(lengths.sum()), int((lengths * lengths).sum())


def _phrases(body: str) -> Counter:
    """Every phrase of the body with its count (the plain definition; ``_phrase_counts`` is the fast one)."""
    return Counter(_PHRASE.findall(body))


def _units(body: str):
    """(the body's UTF-16 units, which of them are Chinese characters of _CJK_RUN): one encode and one mask
    that the phrases, the Chinese character count and the richness share (each made its own: a regex
    scan for the runs, a UTF-32 encode for the windows; ~0.2 s of a 3,000-chapter rebuild)."""
    import numpy as np  # noqa: PLC0415 — numpy is a dependency, but every process imports this module: only the writers pay it

    units = np.frombuffer(body.encode("utf-16-be", "surrogatepass"), dtype=">u2").astype(np.uint16)
    chinese = np.zeros(units.size, dtype=bool)
    for low, high in _CJK_RANGES:
        chinese |= (units >= low) & (units <= high)
    return units, chinese


def _phrase_codes(body: str, units=None, chinese=None):
    """(the phrases used at least PHRASE_MIN times as numbers, ascending — which is their text order —,
    their counts, how many phrases the body has), counted with numpy: each phrase as one 64-bit number
    (its four UTF-16 units; every Chinese character of _CJK_RUN is one), kept where all four are Chinese,
    counted by ``np.unique``. A rebuild fingerprints every chapter, and the phrase count was half of it
    (3,000 chapters: ~1 s). ``units`` / ``chinese``: the body's ``_units``, when the caller has them."""
    import numpy as np  # noqa: PLC0415 — see _units

    if units is None:
        units, chinese = _units(body)
    if units.size < PHRASE_SIZE:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64), 0
    wide = units.astype(np.uint64)
    starts = units.size - PHRASE_SIZE + 1
    whole = np.ones(starts, dtype=bool)
    codes = np.zeros(starts, dtype=np.uint64)
    for k in range(PHRASE_SIZE):
        whole &= chinese[k : k + starts]
        codes |= wide[k : k + starts] << np.uint64(16 * (PHRASE_SIZE - 1 - k))
    values, counts = np.unique(codes[whole], return_counts=True)
    keep = counts >= PHRASE_MIN
    return values[keep], counts[keep], int(counts.sum())


def _phrase_texts(codes) -> list[str]:
    """Phrase numbers back to text in one decode: their units side by side, PHRASE_SIZE per phrase."""
    import numpy as np  # noqa: PLC0415 — see _phrase_codes

    shifts = np.arange(PHRASE_SIZE - 1, -1, -1, dtype=np.uint64) * np.uint64(16)
    text = ((codes[:, None] >> shifts) & np.uint64(0xFFFF)).astype(">u2").tobytes().decode("utf-16-be")
    return [text[i : i + PHRASE_SIZE] for i in range(0, len(text), PHRASE_SIZE)]


def _phrase_counts(body: str) -> tuple[dict[str, int], int]:
    """(the phrases used at least PHRASE_MIN times with their counts, how many phrases the body has) — what
    ``_phrases`` gives (``_phrase_codes``)."""
    kept, counts, ngrams = _phrase_codes(body)
    return dict(zip(_phrase_texts(kept), counts.tolist(), strict=True)), ngrams


def _phrase_top(body: str, units=None, chinese=None) -> tuple[list[tuple[str, int]], int, int]:
    """(the PHRASE_TOP most used of the phrases ``_phrase_counts`` keeps, most used first, ties by the
    phrase; the sum of all their counts; how many phrases the body has): what sorting
    ``_phrase_counts`` gives, ordered in numpy and only the top ones turned back to text (a
    chapter can repeat hundreds of phrases: one string, tuple and sort key each was a third of it)."""
    import numpy as np  # noqa: PLC0415 — see _phrase_codes

    kept, counts, ngrams = _phrase_codes(body, units, chinese)
    # kept is ascending, which is the phrases' text order (one BMP character per unit): a stable sort
    # by count, highest first, keeps ties in text order.
    top = np.argsort(-counts, kind="stable")[:PHRASE_TOP]
    return list(zip(_phrase_texts(kept[top]), counts[top].tolist(), strict=True)), int(counts.sum()), ngrams


def _richness_types(cjk: str, windows: int) -> int:
    """The sum over the first ``windows`` windows of RICHNESS_WINDOW characters of ``cjk`` of the distinct
    characters in each (``_richness_of`` on their code points)."""
    import numpy as np  # noqa: PLC0415 — see _units

    return _richness_of(np.frombuffer(cjk.encode("utf-32-le"), dtype="<u4"), windows)


def _richness_of(cjk, windows: int) -> int:
    """``_richness_types`` of the Chinese characters as numbers (numpy: each window sorted, its changes
    counted; a set per window cost ~0.4 s at 3,000 chapters)."""
    import numpy as np  # noqa: PLC0415 — see _units

    if not windows:
        return 0
    grid = np.sort(cjk[: windows * RICHNESS_WINDOW].reshape(windows, RICHNESS_WINDOW), axis=1)
    return int(windows + np.count_nonzero(grid[:, 1:] != grid[:, :-1]))


def fingerprint_compute(body: str) -> dict:
    """The raw style counts of one chapter body (manual entity tags already stripped), plus
    ``phrases``: its common phrases with their counts (at most PHRASE_TOP, most frequent first)."""
    chars = len("".join(body.split()))
    dialogue = 0
    for opening, pattern in _DIALOGUE:
        if opening in body:  # one literal-prefixed pattern per quote style is ~7x faster than an alternation
            dialogue += len("".join("".join(pattern.findall(body)).split()))
    dots = len(_DOTS.findall(body)) if "..." in body else 0
    # The Chinese characters of _CJK_RUN are all in the BMP, one UTF-16 unit each: their units are the text
    # the runs would join, code point for code point.
    units, chinese = _units(body)
    cjk = units[chinese]
    sentences, length_sum, length_sq = _sentence_sums(body)
    windows = cjk.size // RICHNESS_WINDOW
    common, repeats, ngrams = _phrase_top(body, units, chinese)
    return {
        "chars": chars,
        "cjk_chars": int(cjk.size),
        "sentences": len(_SENTENCE_END.findall(body)) + dots,
        "paragraphs": sum(map(bool, map(str.strip, body.split("\n")))),
        "dialogue_chars": dialogue,
        "exclamations": body.count("！") + body.count("!"),
        "questions": body.count("？") + body.count("?"),
        "ellipses": _runs_of(body, "…") + dots,
        "commas": body.count("，") + body.count(","),
        "sentence_lengths": sentences,
        "sentence_length_sum": length_sum,
        "sentence_length_sq": length_sq,
        "richness_windows": windows,
        "richness_types": _richness_of(cjk, windows),
        "phrase_ngrams": ngrams,
        "phrase_repeats": repeats,
        "phrases": dict(common),
    }


def fingerprints_sum(rows: list[dict]) -> dict:
    """Aggregate raw counts of several chapters (a range's fingerprint); ``phrases`` are summed
    phrase by phrase (each chapter kept its own common phrases only: a range's counts are a floor)."""
    total: dict = dict.fromkeys(FEATURE_KEYS, 0)
    phrases: Counter = Counter()
    for row in rows:
        for key in FEATURE_KEYS:
            total[key] += int(row.get(key, 0))
        phrases.update(row.get("phrases") or {})
    total["phrases"] = dict(sorted(phrases.items(), key=lambda pn: (-pn[1], pn[0])))
    return total
