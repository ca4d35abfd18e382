"""Style fingerprints: raw counts per chapter, so any chapter range aggregates exactly by summing
(ratios such as dialogue share are computed at read time). Keys: docs/book-format.md, "Fingerprints"."""

import re

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
)

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SENTENCE_END = re.compile(r"[。！？!?]+|…+|\.{3,}")
_DIALOGUE = re.compile(r"“([^”]*)”|「([^」]*)」")
_ELLIPSIS = re.compile(r"…+|\.{3,}")


def fingerprint_compute(body: str) -> dict[str, int]:
    """The raw style counts of one chapter body (manual entity tags already stripped)."""
    chars = len("".join(body.split()))
    dialogue = 0
    for match in _DIALOGUE.finditer(body):
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        dialogue += len("".join(inner.split()))
    return {
        "chars": chars,
        "cjk_chars": len(_CJK.findall(body)),
        "sentences": len(_SENTENCE_END.findall(body)),
        "paragraphs": sum(1 for line in body.split("\n") if line.strip()),
        "dialogue_chars": dialogue,
        "exclamations": body.count("！") + body.count("!"),
        "questions": body.count("？") + body.count("?"),
        "ellipses": len(_ELLIPSIS.findall(body)),
        "commas": body.count("，") + body.count(","),
    }


def fingerprints_sum(rows: list[dict[str, int]]) -> dict[str, int]:
    """Aggregate raw counts of several chapters (a range's fingerprint)."""
    total = dict.fromkeys(FEATURE_KEYS, 0)
    for row in rows:
        for key in FEATURE_KEYS:
            total[key] += int(row.get(key, 0))
    return total
