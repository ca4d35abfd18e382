"""What is embedded of a chapter: its summary and its body cut into windows, and what of each the model reads.

A window is the same piece of text that the memory app's BM25 indexes as a body scene (memory.retrieval
cuts bodies with ``windows_split`` too): paragraphs gathered up to ``WINDOW_CHARS`` characters, a
scene break (***, ---, ◇…) always ending one. BM25 reads windows and an answer quotes one.

What the model reads of a window is set by a ``Scheme``. The default, ``SCHEME_WINDOW_HEAD`` (session 6's):
each window alone, its first 128 characters. Two cheaper schemes were measured in the same run and not taken
(bench/README.md): ``SCHEME_HEAD32`` — each window's head cut at 32 of the model's own tokens
(``vectors.tokens_cut``), a third of the cost — held on the dev half and fell on both blind halves; and
``SCHEME_PASSAGES`` — consecutive windows of a scene gathered into passages of up to 1,200 characters, the
head of each window in equal shares, 96 tokens a passage, every window of a passage taking its vector —
weaker than the default on the dev half already. The engine's cost is linear in tokens (about a millisecond
of one core per token on this machine class; batching and threads do not lower the CPU time).

The vector cache is keyed by the hash of the embedded text and its token budget (``Window.key``), so the memory
app's hybrid recall reuses the vectors the ``search`` read uses, a rebuild finds them again, and a
digest that did not change is never embedded twice. Pure: no Django.
"""

import hashlib
import re
from dataclasses import dataclass

WINDOW_CHARS = 400
SCENE_BREAK = re.compile(r"^\s*(?:\*\s*\*\s*\*|-{3,}|＊{3,}|◇+|◆+|~{3,}|……{2,})\s*$")


@dataclass(frozen=True)
class Scheme:
    """How windows become embedded texts: ``passage_chars`` 0 embeds each window alone; ``embed_chars``
    caps the digest in characters, ``embed_tokens`` (None: no cut) in the model's tokens."""

    passage_chars: int
    embed_chars: int
    embed_tokens: int | None
    digest: str  # "head": the passage's first characters; "heads": each window's head, in equal shares

    @property
    def tag(self) -> str:
        """What goes into a key besides the text (empty for the first scheme: its keys stay valid)."""
        return "" if self.embed_tokens is None else f"t{self.embed_tokens}:"


# The default (session 6's): every window alone, its first 128 characters.
SCHEME_WINDOW_HEAD = Scheme(passage_chars=0, embed_chars=128, embed_tokens=None, digest="head")
# Measured and not taken (see above): every window alone, its head cut at 32 of the model's tokens.
SCHEME_HEAD32 = Scheme(passage_chars=0, embed_chars=40, embed_tokens=32, digest="head")
# Measured on the dev half and not taken: windows gathered into passages of up to 1,200 characters, each
# window's head in equal shares, 96 tokens a passage.
SCHEME_PASSAGES = Scheme(passage_chars=1200, embed_chars=117, embed_tokens=96, digest="heads")
SCHEME = SCHEME_WINDOW_HEAD


@dataclass(frozen=True)
class Window:
    """One piece of a chapter: ``kind`` "summary" (line 0) or "scene" (its first body line); ``embed``
    is the digest of its passage (the text the model reads, shared by the passage's windows)."""

    chapter: int
    kind: str
    order: int
    line: int
    text: str
    embed: str = ""
    tag: str = ""

    @property
    def embed_text(self) -> str:
        return self.embed or self.text

    @property
    def key(self) -> str:
        return text_key(self.tag + self.embed_text)


def text_key(text: str) -> str:
    """The cache key of a text: what its vector is stored under (whatever the chapter or book)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:24]


def windows_split(body: str, *, breaks: list[int] | None = None) -> list[tuple[int, str]]:
    """(1-based line of its first paragraph, text) of each window of ``body``: paragraphs (non-blank
    lines, stripped) joined with newlines up to about ``WINDOW_CHARS``; a scene break ends a window.
    ``breaks``, when given, receives the index of each window that a scene break ended."""
    out: list[tuple[int, str]] = []
    current, start = "", 0
    for number, raw in enumerate((body or "").split("\n"), start=1):
        if SCENE_BREAK.match(raw):
            if current:
                out.append((start, current))
                if breaks is not None:
                    breaks.append(len(out) - 1)
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


def passages_group(texts: list[str], *, breaks: set[int], limit: int) -> list[list[int]]:
    """The windows (indexes) of each passage: consecutive windows up to ``limit`` characters, a window
    that a scene break ended closing its passage; ``limit`` 0: each window alone."""
    groups: list[list[int]] = []
    size = 0
    for i, text in enumerate(texts):
        if not groups or not limit or size + len(text) > limit:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += len(text)
        if i in breaks:
            size = limit + 1  # the next window starts a passage
    return groups


def digest(texts: list[str], *, scheme: Scheme) -> str:
    """The text the model reads of a passage of ``texts`` (see the module's docstring)."""
    if scheme.digest == "head" or len(texts) == 1:
        return "\n".join(texts)[: scheme.embed_chars]
    share = scheme.embed_chars // len(texts)
    return "\n".join(t[:share] for t in texts)


def chapter_windows(*, number: int, summary: str, body: str, scheme: Scheme | None = None) -> list[Window]:
    """The summary (when the author wrote one) and the body windows of one chapter, each with the digest
    of its passage."""
    scheme = scheme or SCHEME
    windows = []
    summary = (summary or "").strip()
    if summary:
        windows.append(Window(number, "summary", 0, 0, summary, summary[: scheme.embed_chars], scheme.tag))
    breaks: list[int] = []
    split = windows_split(body, breaks=breaks)
    texts = [text for _, text in split]
    for group in passages_group(texts, breaks=set(breaks), limit=scheme.passage_chars):
        embed = digest([texts[i] for i in group], scheme=scheme)
        windows += [Window(number, "scene", i, split[i][0], texts[i], embed, scheme.tag) for i in group]
    return windows
