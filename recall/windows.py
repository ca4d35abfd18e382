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
weaker than the default on the dev half already. Session 8 measured a third, ``SCHEME_SALIENT`` — passages
of up to 1,200 characters, the model reading each passage's most salient sentences (``salient_digest``:
words rare in the segmenter's dictionary and frequent in the chapter), 96 characters a passage, a quarter
of the default's tokens — and did not take it either: it held on the dev half and blind2 and fell on the
first blind half (hybrid 18 → 12 of 23). Its digests need the segmenter, so they are cached by chapter body
(``recall.vectors.DigestCache``) for the index a search builds. Session 10 measured
``SCHEME_HEAD64`` and ``SCHEME_HEAD96`` (each window's first 64 / 96 characters: 53 % / 76 % of the tokens) and
took neither: semantic recall 55 / 65 of 121 scenes against 77, hybrid 93 / 95 against 97. Session 11 measured
``SCHEME_PAIRS`` and ``SCHEME_TRIPLES`` (windows gathered into passages of up to 800 / 1,200 characters, the
model reading the head of each passage's first window — the default's own text and cache key for that
window — 54 % / 34 % of the tokens) and took neither: hybrid 95 / 94 of the same 121 scenes against 97,
semantic 69 / 60 against 77. The engine's cost is linear in tokens (about a millisecond
of one core per token on this machine class; batching and threads do not lower the CPU time).

The vector cache is keyed by the hash of the embedded text and its token budget (``Window.key``), so the memory
app's hybrid recall reuses the vectors the ``search`` read uses, a rebuild finds them again, and a
digest that did not change is never embedded twice. Pure: no Django.
"""

import hashlib
import math
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
    digest: str  # "head": the passage's first characters; "heads": each window's head, in equal shares;
    # "salient": the passage's most salient sentences (``salient_digest``), in their order

    @property
    def tag(self) -> str:
        """What goes into a key besides the text (empty for the first scheme: its keys stay valid)."""
        return "" if self.embed_tokens is None else f"t{self.embed_tokens}:"


# The default (session 6's): every window alone, its first 128 characters.
SCHEME_WINDOW_HEAD = Scheme(passage_chars=0, embed_chars=128, embed_tokens=None, digest="head")
# Measured and not taken (see above): every window alone, its head cut at 32 of the model's tokens.
SCHEME_HEAD32 = Scheme(passage_chars=0, embed_chars=40, embed_tokens=32, digest="head")
# Session 10, measured against the default for the whole-book cost: every window alone, its first 64 characters.
SCHEME_HEAD64 = Scheme(passage_chars=0, embed_chars=64, embed_tokens=None, digest="head")
# Session 10, the point between: every window alone, its first 96 characters.
SCHEME_HEAD96 = Scheme(passage_chars=0, embed_chars=96, embed_tokens=None, digest="head")
# Measured on the dev half and not taken: windows gathered into passages of up to 1,200 characters, each
# window's head in equal shares, 96 tokens a passage.
SCHEME_PASSAGES = Scheme(passage_chars=1200, embed_chars=117, embed_tokens=96, digest="heads")
# Windows gathered into passages of up to 1,200 characters; the model reads the passage's most salient
# sentences, up to 96 characters (cut at 96 tokens).
SCHEME_SALIENT = Scheme(passage_chars=1200, embed_chars=96, embed_tokens=96, digest="salient")
# Session 11, measured and not taken (see above): consecutive windows gathered into passages of up to 800 / 1,200
# characters (two / three windows mostly, a scene break closing one), the model reading the passage's first 128
# characters — the head of its first window, the very text (and cache key) the default embeds for that window —
# every window of the passage taking its vector: a half / a third of the default's tokens.
SCHEME_PAIRS = Scheme(passage_chars=800, embed_chars=128, embed_tokens=None, digest="head")
SCHEME_TRIPLES = Scheme(passage_chars=1200, embed_chars=128, embed_tokens=None, digest="head")
SCHEME = SCHEME_WINDOW_HEAD


def digest_costly(scheme: Scheme) -> bool:
    """Whether the scheme's digests are worth caching (they need the segmenter)."""
    return scheme.digest == "salient"


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


SENTENCE = re.compile(r"[^。！？!?；;\n]*(?:[。！？!?；;]+[”’」』\"]*|$)")
_PUNCT = re.compile(r"^[\W_]+$")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: cut after 。！？； (and a closing quote that follows) and at line ends."""
    return [m.group(0).strip() for m in SENTENCE.finditer(text) if m.group(0).strip()]


def word_weights(body: str) -> dict[str, float]:
    """How much each word of ``body`` says about it: rare in the language (the segmenter's dictionary
    frequency; a word it does not know counts as seen once) times frequent in the chapter (log-damped)."""
    import jieba  # noqa: PLC0415 — loaded only by the salient scheme (its dictionary is ~0.8 s the first time)

    jieba.setLogLevel(60)
    tk = jieba.dt
    tk.check_initialized()
    total = float(tk.total)
    counts: dict[str, int] = {}
    for word in tk.cut(body, HMM=False):
        if len(word) >= 2 and not _PUNCT.match(word):
            counts[word] = counts.get(word, 0) + 1
    return {w: math.log(total / (tk.FREQ.get(w) or 1)) * (1.0 + math.log(c)) for w, c in counts.items()}


def salient_digest(text: str, weights: dict[str, float], limit: int) -> str:
    """The sentences of ``text`` that weigh most for their length (Σ weight of their distinct words over
    the square root of their length), picked best first up to ``limit`` characters, kept in their order."""
    import jieba  # noqa: PLC0415 — see word_weights

    sents = sentences(text)
    scored = []
    for i, sent in enumerate(sents):
        words = {w for w in jieba.dt.cut(sent, HMM=False) if w in weights}
        scored.append((sum(weights[w] for w in words) / math.sqrt(len(sent) + 4), i))
    chosen, size = [], 0
    for _score, i in sorted(scored, key=lambda x: (-x[0], x[1])):
        if size + len(sents[i]) <= limit:
            chosen.append(i)
            size += len(sents[i])
        if size >= limit - 4:
            break
    if not chosen:
        return text[:limit]
    return "".join(sents[i] for i in sorted(chosen))


def digest(texts: list[str], *, scheme: Scheme, weights: dict[str, float] | None = None) -> str:
    """The text the model reads of a passage of ``texts`` (see the module's docstring)."""
    if scheme.digest == "salient":
        return salient_digest("\n".join(texts), weights or {}, scheme.embed_chars)
    if scheme.digest == "head" or len(texts) == 1:
        return "\n".join(texts)[: scheme.embed_chars]
    share = scheme.embed_chars // len(texts)
    return "\n".join(t[:share] for t in texts)


def digests_key(body: str, scheme: Scheme) -> str:
    """What a chapter's passage digests are cached under (``chapter_windows``'s ``digests``): the scheme and
    the body (a changed body is cut and digested again)."""
    return text_key(f"{scheme.passage_chars}:{scheme.embed_chars}:{scheme.digest}:{scheme.tag}" + body)


def chapter_windows(
    *,
    number: int,
    summary: str,
    body: str,
    scheme: Scheme | None = None,
    digests: list[str] | None = None,
    digests_out: list[str] | None = None,
) -> list[Window]:
    """The summary (when the author wrote one) and the body windows of one chapter, each with the digest
    of its passage. ``digests``: the passages' digests computed before for this body and scheme (a cache,
    ``recall.vectors.DigestCache``: the salient digest costs the segmenter a pass, the others nothing);
    a list of the wrong length is ignored. ``digests_out``, when given, receives the digests used."""
    scheme = scheme or SCHEME
    windows = []
    summary = (summary or "").strip()
    if summary:
        windows.append(Window(number, "summary", 0, 0, summary, summary[: scheme.embed_chars], scheme.tag))
    breaks: list[int] = []
    split = windows_split(body, breaks=breaks)
    texts = [text for _, text in split]
    groups = passages_group(texts, breaks=set(breaks), limit=scheme.passage_chars)
    if digests is None or len(digests) != len(groups):
        weights = word_weights(body) if scheme.digest == "salient" else None
        digests = [digest([texts[i] for i in group], scheme=scheme, weights=weights) for group in groups]
    if digests_out is not None:
        digests_out.extend(digests)
    for group, embed in zip(groups, digests, strict=True):
        windows += [Window(number, "scene", i, split[i][0], texts[i], embed, scheme.tag) for i in group]
    return windows
