"""The draft as the checks see it: front matter, the prose with its file lines, the quotations, the
sentences and clauses, and the draft's own entity tags. Pure: no Django, no database.

Entity tags are blanked out of the prose but their line breaks kept, so an offset in the prose maps to
the same line of the file the author edits (the opening ``---`` is line 1)."""

import bisect
import itertools
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from bookfiles.parser.markup import FrontMatterError, entity_tag_spans, front_matter_split, numeral_parse
from kernel.bounds import NUMBER_MAX

SENTENCE_END = frozenset("。！？!?\n")
CLAUSE_END = frozenset("，,；;：:。！？!?\n“”「」『』")
OPEN_QUOTES = {"“": "”", "「": "」", "『": "』"}
# an opening mark up to (not including) its closing mark, the end of the paragraph or of the text
_QUOTATION = re.compile("|".join(f"{o}[^{c}\n]*" for o, c in OPEN_QUOTES.items()))
_SENTENCE_MARK = re.compile("[" + re.escape("".join(sorted(SENTENCE_END))) + "]")
_CLAUSE_MARK = re.compile("[" + re.escape("".join(sorted(CLAUSE_END))) + "]")

_ATTR = re.compile(r'(\w[\w-]*)\s*=\s*"([^"]*)"')
_UPDATE = re.compile(r"<entity-update\b([^>]*)>(.*?)</entity-update>", re.S)
_OP = re.compile(r"<(set|unset|add|remove|inc)\b([^>]*)/?>")
_CHAPTER = re.compile(r"^\s*第?\s*([0-9零〇一二两三四五六七八九十百千万]+)\s*章?\s*$")


class DraftError(ValueError):
    """A draft that cannot be read: the message says what, ``line`` where."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass
class TagOp:
    ref: str  # the entity-update's id= or ref=
    op: str
    field: str
    value: Any
    line: int


@dataclass
class Draft:
    front_matter: dict[str, Any]
    prose: str  # the whole file with the front matter and tags blanked (newlines kept)
    body_line: int
    chapter: int | None
    perspective: str
    opens: list[str]
    advances: list[str]
    closes: list[str]
    hook_type: str
    tag_ops: list[TagOp] = field(default_factory=list)
    front_matter_lines: list[str] = field(default_factory=list)  # the file's lines above the body
    _line_starts: list[int] = field(default_factory=list)
    _quotes: list[tuple[int, int]] = field(default_factory=list)
    _quote_starts: list[int] = field(default_factory=list)

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self._line_starts, pos)

    def line_text(self, line: int) -> str:
        start = self._line_starts[line - 1]
        end = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.prose)
        return self.prose[start:end]

    def in_quote(self, pos: int) -> bool:
        i = bisect.bisect_right(self._quote_starts, pos) - 1
        return i >= 0 and self._quotes[i][0] < pos < self._quotes[i][1]

    # offsets of the sentence / clause end marks, on first use: a sentence is found by bisection,
    # not by walking the prose
    @cached_property
    def _sentence_marks(self) -> list[int]:
        return [m.start() for m in _SENTENCE_MARK.finditer(self.prose)]

    @cached_property
    def _clause_marks(self) -> list[int]:
        return [m.start() for m in _CLAUSE_MARK.finditer(self.prose)]

    def sentence(self, pos: int, end: int | None = None) -> tuple[int, int]:
        """The sentence around ``pos`` … ``end``: from after the previous end mark to the next one."""
        end = pos if end is None else end
        marks = self._sentence_marks
        i = bisect.bisect_left(marks, pos)
        j = bisect.bisect_left(marks, end)
        return (marks[i - 1] + 1 if i else 0), (marks[j] if j < len(marks) else len(self.prose))

    def clause_start(self, pos: int) -> int:
        i = bisect.bisect_left(self._clause_marks, pos)
        return self._clause_marks[i - 1] + 1 if i else 0

    def quote(self, start: int, end: int, *, width: int = 12) -> str:
        """The matched text with a little context, never across a line."""
        s, e = self.sentence(start, end)
        s, e = max(s, start - width), min(e, end + width)
        return self.prose[s:e].strip()


def _chapter_value(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        match = _CHAPTER.match(str(value))
        number = numeral_parse(match.group(1)) if match else None
    if number is None or not 1 <= number <= NUMBER_MAX:
        raise DraftError(f"front matter 的 chapter 应为 1…{NUMBER_MAX} 的章节号，实际为 {value!r}", 2)
    return number


def _ids(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    raise DraftError(f"front matter 的 threads.{key} 应为线索 id 列表，实际为 {value!r}", 2)


def _tag_ops(body: str, spans: list[tuple[int, int]], body_line: int) -> list[TagOp]:
    ops: list[TagOp] = []
    for start, end in spans:
        tag = body[start:end]
        match = _UPDATE.match(tag)
        if match is None:
            continue
        head = dict(_ATTR.findall(match.group(1)))
        ref = head.get("id") or head.get("ref") or ""
        line = body_line + body.count("\n", 0, start)
        for op, attrs in _OP.findall(match.group(2)):
            values = dict(_ATTR.findall(attrs))
            name = values.get("key") or values.get("field") or ""
            if ref and name:
                ops.append(TagOp(ref=ref, op=op, field=name, value=values.get("value", values.get("delta")), line=line))
    return ops


# a speech may run over paragraphs: at most this many unmarked paragraphs between its opening one and
# the one its closing mark ends (0: the next paragraph only — a narrated paragraph between ends the
# speech, so a line inserted there is never silenced as speech)
CONTINUED_PARAGRAPHS_MAX = 0


def _quote_spans(prose: str) -> list[tuple[int, int]]:
    # A quotation closes at its mark or at the end of the paragraph: one unclosed “ never turns the
    # rest of the chapter into dialogue. A speech over two paragraphs is the exception: an unclosed
    # quotation continues when the next paragraph meets its closing mark before any opening mark —
    # the text up to that mark is the same speech.
    spans = [match.span() for match in _QUOTATION.finditer(prose)]
    if not spans:
        return spans
    out: list[tuple[int, int]] = []
    size = len(prose)
    for start, end in spans:
        out.append((start, end))
        if end >= size or prose[end] != "\n":
            continue
        closing = OPEN_QUOTES[prose[start]]
        pos, skipped, between = end, 0, []
        while pos < size and skipped <= CONTINUED_PARAGRAPHS_MAX:
            line_end = prose.find("\n", pos + 1)
            line_end = size if line_end == -1 else line_end
            line = prose[pos + 1 : line_end]
            marks = [i for i in (line.find(closing), *(line.find(o) for o in OPEN_QUOTES)) if i != -1]
            if marks:
                first = min(marks)
                if line[first] == closing:
                    # each continued span starts at its paragraph's newline (in_quote is strict)
                    out.extend(between)
                    out.append((pos, pos + 1 + first))
                break
            if line.strip():
                skipped += 1
                between.append((pos, line_end))
            pos = line_end
    out.sort()
    return out


_FM_END = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


def _body_split(text: str) -> tuple[str, int] | None:
    """``front_matter_split``'s body and body line without loading the YAML (None: not a front matter
    the split would accept as is). For a file whose front matter the database already holds."""
    if not text.startswith("---"):
        return text, 1
    first_nl = text.find("\n")
    if first_nl == -1 or text[:first_nl].rstrip() != "---":
        return text, 1
    match = _FM_END.search(text[first_nl + 1 :])
    if match is None:
        return None
    body = text[first_nl + 1 + match.end() :]
    body = body[2:] if body.startswith("\r\n") else body[1:] if body.startswith("\n") else body
    return body, text[first_nl + 1 : first_nl + 1 + match.start()].count("\n") + 3


def draft_parse(text: str, *, front_matter: dict[str, Any] | None = None) -> Draft:
    """A draft (Markdown with optional front matter, as a chapter file) → ``Draft``; ``DraftError`` when unreadable.

    ``front_matter``: the file's front matter as already parsed (the database's copy of an unchanged
    chapter file): the YAML is then not loaded again."""
    if "\x00" in text:
        raise DraftError("草稿含 NUL 字符", text[: text.index("\x00")].count("\n") + 1)
    text = text.removeprefix("\ufeff")
    split = _body_split(text) if front_matter is not None else None
    if split is not None:
        fm, (body, body_line) = front_matter, split
    else:
        try:
            fm, _, body, body_line = front_matter_split(text)
        except FrontMatterError as exc:
            raise DraftError(f"front matter 解析失败：{exc.message}", exc.line) from exc
    threads = fm.get("threads") or {}
    if not isinstance(threads, dict):
        raise DraftError(f"front matter 的 threads 应为 opens/advances/closes 映射，实际为 {threads!r}", 2)
    spans = entity_tag_spans(body) if "<entity" in body else []
    pieces, pos = [], 0
    for start, end in spans:
        pieces.append(body[pos:start])
        pieces.append("\n" * body.count("\n", start, end))
        pos = end
    pieces.append(body[pos:])
    prose = "\n" * (body_line - 1) + "".join(pieces)
    draft = Draft(
        front_matter=fm,
        prose=prose,
        body_line=body_line,
        chapter=_chapter_value(fm.get("chapter")),
        perspective=str(fm.get("perspective") or "").strip(),
        opens=_ids(threads.get("opens"), "opens"),
        advances=_ids(threads.get("advances"), "advances"),
        closes=_ids(threads.get("closes"), "closes"),
        hook_type=str(fm.get("hook_type") or "").strip(),
        tag_ops=_tag_ops(body, spans, body_line),
        front_matter_lines=text.split("\n", body_line - 1)[: body_line - 1],
    )
    # in C: each line's length plus its newline, summed
    draft._line_starts = list(itertools.accumulate(map((1).__add__, map(len, prose.split("\n")[:-1])), initial=0))
    draft._quotes = _quote_spans(prose)
    draft._quote_starts = [s for s, _ in draft._quotes]
    return draft
