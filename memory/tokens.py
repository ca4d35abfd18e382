"""Token estimate for mixed Chinese / ASCII text.

We cannot know the caller's tokenizer, so the estimate is deliberately on the high side of the
common ones (cl100k / o200k / Qwen / DeepSeek count most CJK characters as ~0.6–1.5 tokens): a pack
built against this estimate never overflows a real prompt by much, and never overflows the budget
as we count it. Rules (docs/memory.md):

- every CJK character, full-width punctuation mark or other non-ASCII character: 1 token;
- a run of ASCII letters / digits: 1 token per 4 characters, rounded up;
- every other ASCII symbol (punctuation, ``#``, ``-``…): 1 token; whitespace is free.

The estimate is additive over lines, so the tokens of a rendered pack are the sum of its blocks.
"""

import re

_ASCII_WORD = re.compile(r"[A-Za-z0-9_]+")


def tokens_estimate(text: str) -> int:
    """Estimated tokens of ``text`` (see the module docstring for the rules)."""
    if not text:
        return 0
    total = 0
    for run in _ASCII_WORD.findall(text):
        total += (len(run) + 3) // 4
    rest = _ASCII_WORD.sub("", text)
    for ch in rest:
        if not ch.isspace():
            total += 1
    return total


def tokens_truncate(text: str, *, limit: int, keep_end: bool = False) -> str:
    """The longest prefix (``keep_end``: suffix) of ``text`` whose estimate, with the '…' that marks
    the cut, is at most ``limit``."""
    if tokens_estimate(text) <= limit:
        return text
    if limit <= 1:
        return ""

    def piece(n: int) -> str:
        return text[len(text) - n :] if keep_end else text[:n]

    # Binary search on the character length: the estimate is monotone in the piece's length.
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tokens_estimate(piece(mid)) + 1 <= limit:
            lo = mid
        else:
            hi = mid - 1
    return "…" + piece(lo) if keep_end else piece(lo) + "…"
