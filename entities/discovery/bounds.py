"""Bounds of discovery on hostile text: time and memory grow with the text, never faster.

- **Size**: at most ``max_chars`` characters of the chapters are read (in order); the rest is left
  out and the report says so (``bounds.truncated``), rather than running for hours.
- **Long lines**: a paragraph longer than ``MAX_PIECE`` characters (a 10 MB chapter on one line) is
  segmented in pieces, cut after a sentence end when there is one: the segmenter builds a graph over a
  whole run of text, so one huge run costs memory it does not need.
- **Text that is no language**: jieba's part-of-speech HMM costs tens of milliseconds per character
  on characters it cannot place in any dictionary word (random CJK text: minutes per 10,000
  characters). A piece in which fewer than ``LEXICAL_FLOOR`` of the two-character windows are
  dictionary words (real paragraphs of 西游记 and 水浒传: ≥ 19 %; random CJK text: < 1 %) is segmented
  by the dictionary alone (no HMM: no new names found there) and counted (``bounds.unlexical``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

Token = tuple[str, str]
# ≈ 2.5 minutes of CPU, peak RSS under 500 MB (bench_discover_hostile --split); the REST door takes less.
MAX_CHARS = 2_500_000
REST_MAX_CHARS = 1_000_000  # a request's share (≈ 1 minute); the command line reads up to MAX_CHARS
MAX_PIECE = 2000
# A chapter is read up to this many characters (about 20 long chapters: a chapter longer than that is a
# pasted book, or an attack); the rest of it is left out and ``bounds.cut`` says so.
MAX_CHAPTER_CHARS = 200_000
LEXICAL_FLOOR = 0.08
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
_SENTENCE_END = re.compile(r"[。！？!?；;…]")


def chapters_bounded(
    chapters: Iterable[tuple[int, str]], max_chars: int, chapter_chars: int = MAX_CHAPTER_CHARS
) -> tuple[list[tuple[int, str]], dict]:
    """The chapters up to ``max_chars`` characters in all (the last one cut), each read up to
    ``chapter_chars`` characters (cut after a sentence end when there is one), and what was left out:
    ``cut`` lists the chapters read only in part, as (chapter, its characters, read)."""
    out: list[tuple[int, str]] = []
    cut: list[tuple[int, int, int]] = []
    used = total = 0
    for number, body in chapters:
        total += len(body)
        if used < max_chars:
            piece = body[: min(max_chars - used, chapter_chars)]
            if len(piece) == chapter_chars < len(body):
                ends = [m.end() for m in _SENTENCE_END.finditer(piece, chapter_chars - MAX_PIECE)]
                piece = piece[: ends[-1]] if ends else piece
                cut.append((number, len(body), len(piece)))
            out.append((number, piece))
            used += len(piece)
    note = {"chars": total, "read": used, "truncated": used < total}
    if cut:
        note["cut"] = cut
    return out, note


def pieces(paragraph: str, size: int = MAX_PIECE) -> list[str]:
    """``paragraph`` in pieces of at most ``size`` characters, cut after the last sentence end of each
    window when there is one (else at ``size``)."""
    out = []
    start, n = 0, len(paragraph)
    while n - start > size:  # offsets, not the rest copied each time (quadratic on a 10 MB line)
        ends = [m.end() for m in _SENTENCE_END.finditer(paragraph, start, start + size)]
        cut = ends[-1] if ends and ends[-1] - start >= size // 4 else start + size
        out.append(paragraph[start:cut])
        start = cut
    out.append(paragraph[start:])
    return out


def lexical_share(text: str, lexicon: Mapping[str, int]) -> float:
    """The share of the text's two-character Han windows that are words of the dictionary."""
    windows = words = 0
    for run in _HAN_RUN.findall(text):
        for i in range(len(run) - 1):
            windows += 1
            words += lexicon.get(run[i : i + 2], 0) > 0
    return words / windows if windows else 1.0


def segment_bounded(
    text: str,
    segment: Callable[[str], list[Token]],
    *,
    lexicon: Mapping[str, int],
    plain: Callable[[str], list[Token]] | None,
    note: dict,
) -> list[Token]:
    """The tokens of a chapter, segmented line by line and long lines piece by piece; a piece that is
    no language (see the module) goes to ``plain`` (the dictionary alone) when one is given."""
    tokens: list[Token] = []
    buffer: list[str] = []  # ordinary lines, segmented together (the same tokens as the whole text)
    for line in text.splitlines(keepends=True):
        parts = pieces(line) if len(line) > MAX_PIECE else [line]
        for part in parts:
            hostile = (
                plain is not None and lexicon and len(part) >= 100 and lexical_share(part, lexicon) < LEXICAL_FLOOR
            )
            if not hostile and len(parts) == 1:
                buffer.append(part)
                continue
            if buffer:
                tokens += segment("".join(buffer))
                buffer = []
            if hostile:
                note["unlexical"] = note.get("unlexical", 0) + 1
                tokens += plain(part)
            else:
                tokens += segment(part)
    if buffer:
        tokens += segment("".join(buffer))
    return tokens
