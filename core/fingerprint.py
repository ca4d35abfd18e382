"""Style fingerprints: raw counts per chapter, so any chapter range aggregates exactly by summing
(ratios such as dialogue share, the sentence-length variance or the vocabulary richness are
computed at read time). Keys: docs/book-format.md, "Fingerprints".

Deterministic: the same body gives the same counts (no clock, no randomness, ties of the common
phrases broken by the phrase itself)."""

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
_NOT_COUNTED = re.compile(r"[ \t\r\u3000，、；：“”‘’「」『』（）《》〈〉【】—–\-·,;:'\"()\[\]<>~～*]+|(?<!\.)\.(?!\.)")
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
    return [len(part) for part in _SENTENCE_SPLIT.split(_NOT_COUNTED.sub("", body)) if part]


def _phrases(body: str) -> Counter:
    return Counter(_PHRASE.findall(body))


def fingerprint_compute(body: str) -> dict:
    """The raw style counts of one chapter body (manual entity tags already stripped), plus
    ``phrases``: its common phrases with their counts (at most PHRASE_TOP, most frequent first)."""
    chars = len("".join(body.split()))
    dialogue = 0
    for opening, pattern in _DIALOGUE:
        if opening in body:  # one literal-prefixed pattern per quote style is ~7x faster than an alternation
            dialogue += len("".join("".join(pattern.findall(body)).split()))
    dots = len(_DOTS.findall(body)) if "..." in body else 0
    runs = _CJK_RUN.findall(body)
    cjk = "".join(runs)
    lengths = _sentence_lengths(body)
    windows = len(cjk) // RICHNESS_WINDOW
    phrases = _phrases(body)
    common = sorted(((p, n) for p, n in phrases.items() if n >= PHRASE_MIN), key=lambda pn: (-pn[1], pn[0]))
    return {
        "chars": chars,
        "cjk_chars": len(cjk),
        "sentences": len(_SENTENCE_END.findall(body)) + dots,
        "paragraphs": sum(1 for line in body.split("\n") if line.strip()),
        "dialogue_chars": dialogue,
        "exclamations": body.count("！") + body.count("!"),
        "questions": body.count("？") + body.count("?"),
        "ellipses": _runs_of(body, "…") + dots,
        "commas": body.count("，") + body.count(","),
        "sentence_lengths": len(lengths),
        "sentence_length_sum": sum(lengths),
        "sentence_length_sq": sum(n * n for n in lengths),
        "richness_windows": windows,
        "richness_types": sum(len(set(cjk[i * RICHNESS_WINDOW : (i + 1) * RICHNESS_WINDOW])) for i in range(windows)),
        "phrase_ngrams": sum(phrases.values()),
        "phrase_repeats": sum(n for _, n in common),
        "phrases": dict(common[:PHRASE_TOP]),
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
