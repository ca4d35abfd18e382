"""What is embedded of a chapter: its summary and its body cut into windows, with the line each starts at.

A window is the same piece of text that the memory app's BM25 indexes as a body scene (memory.retrieval
cuts bodies with ``windows_split`` too): paragraphs gathered up to ``WINDOW_CHARS`` characters, a
scene break (***, ---, ◇…) always ending one. One cut for both means one vector per piece of text: the
vector cache is keyed by the text's hash, so the memory app's hybrid recall reuses the vectors the
``search`` read uses, and nothing is embedded twice. Pure: no Django.
"""

import hashlib
import re
from dataclasses import dataclass

WINDOW_CHARS = 400
# What of a window is embedded: its first EMBED_CHARS characters. The engine costs about a millisecond a
# character on this machine class (two cores), so embedding every character of a 3,000-chapter book would
# take hours; the head of each window is what the model reads, the whole window is what BM25 reads and
# what an answer quotes (docs/semantic-recall.md has the figures).
EMBED_CHARS = 128
SCENE_BREAK = re.compile(r"^\s*(?:\*\s*\*\s*\*|-{3,}|＊{3,}|◇+|◆+|~{3,}|……{2,})\s*$")


@dataclass(frozen=True)
class Window:
    """One embedded piece of a chapter: ``kind`` "summary" (line 0) or "scene" (its first body line)."""

    chapter: int
    kind: str
    order: int
    line: int
    text: str

    @property
    def embed_text(self) -> str:
        return self.text[:EMBED_CHARS]

    @property
    def key(self) -> str:
        return text_key(self.embed_text)


def text_key(text: str) -> str:
    """The cache key of a text: what its vector is stored under (whatever the chapter or book)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:24]


def windows_split(body: str) -> list[tuple[int, str]]:
    """(1-based line of its first paragraph, text) of each window of ``body``: paragraphs (non-blank
    lines, stripped) joined with newlines up to about ``WINDOW_CHARS``; a scene break ends a window."""
    out: list[tuple[int, str]] = []
    current, start = "", 0
    for number, raw in enumerate((body or "").split("\n"), start=1):
        if SCENE_BREAK.match(raw):
            if current:
                out.append((start, current))
            current, start = "", 0
            continue
        para = raw.strip()
        if not para:
            continue
        if current and len(current) + len(para) > WINDOW_CHARS:
            out.append((start, current))
            current = ""
        if not current:
            start = number
            current = para
        else:
            current = f"{current}\n{para}"
    if current:
        out.append((start, current))
    return out


def chapter_windows(*, number: int, summary: str, body: str) -> list[Window]:
    """The summary (when the author wrote one) and the body windows of one chapter."""
    windows = []
    if (summary or "").strip():
        windows.append(Window(number, "summary", 0, 0, summary.strip()))
    windows += [Window(number, "scene", i, line, text) for i, (line, text) in enumerate(windows_split(body))]
    return windows
