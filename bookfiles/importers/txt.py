"""Split a plain-text novel into chapters and volumes (pure: text in, data out; no files, no database).

Written here because heading detection is the product: real e-book texts carry stray prefixes
(``《》目录 第一回　…``), every numeral style (第十二章, 第一零零回, 第〇〇一回, 第12章, 第两百章) and
sentences that merely mention a chapter (``见第十二回``). The rules, documented in docs/import.md:

- a heading line is short (≤ ``HEADING_MAX_CHARS`` characters once stripped);
- ``第<number><回|章|节|卷>`` (or ``卷<number>``) starts the line, or follows a short prefix
  (≤ ``PREFIX_MAX_CHARS``) that has no sentence punctuation and either ends in whitespace / a
  bracket, or ends in a known marker (正文, 目录, 章节, VIP, …);
- after the marker comes the end of the line, whitespace or a separator (``：:、.·-—``), never a
  running sentence (``第三回合时说`` is rejected);
- the title has no ``。`` and no dialogue quotes.

Chapter titles are normalized: every run of whitespace (including U+3000) becomes one ASCII space,
so the two halves of a 回目 read ``灵根育孕源流出 心性修持大道生``.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from kernel.bounds import NUMBER_MAX

HEADING_MAX_CHARS = 60
PREFIX_MAX_CHARS = 12
TITLE_MAX_CHARS = 50
REJECTED_TEXT_CHARS = 60
TOC_BODY_MAX_CHARS = 20
GAP_RANGES_MAX = 100  # the report lists at most this many missing ranges (the count is always exact)

_CN_DIGITS = {"〇": 0, "零": 0, "○": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5}
_CN_DIGITS |= {"六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
_NUMERAL = r"[0-9０-９]+|[〇零○一二两三四五六七八九十百千万]+"
_FULLWIDTH_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")

# 第<n><kind> anywhere in the first part of a line; the rules below decide whether it is a heading.
_MARKER = re.compile(rf"第\s*(?P<num>{_NUMERAL})\s*(?P<kind>[回章节卷])|卷\s*(?P<vnum>{_NUMERAL})(?![回章节])")
_SEPARATORS = "：:、.．·-—_|"
_TITLE_OPENERS = "【[（(《「"
_SENTENCE_PUNCT = set('，。！？；：,!?;“”"「」『』（）()')
_PREFIX_MARKERS = ("正文", "目录", "章节", "VIP", "vip", "免费", "最新", "卷", "内容", "全文", "更新")
_PREFIX_CLOSERS = set("》】]）)」』>")
_BRACKETS = {"【": "】", "[": "]", "〖": "〗", "［": "］"}
_QUOTES = set('“”"「」『』')
_WHITESPACE_RUN = re.compile(r"\s+")
_BOOK_TITLE_LINE = re.compile(r"^《([^》]+)》$")


def cn_number_parse(text: str) -> int | None:
    """The value of an Arabic or Chinese numeral: 12, １２, 十二, 一百二十, 一零零, 〇〇一, 两百, 一千零一."""
    text = text.translate(_FULLWIDTH_DIGITS)
    if text.isdigit():
        return int(text)
    if not any(ch in _CN_UNITS or ch == "万" for ch in text):
        # Digit-by-digit form (一零零, 〇〇一): every character must be a digit.
        if not all(ch in _CN_DIGITS for ch in text):
            return None
        return int("".join(str(_CN_DIGITS[ch]) for ch in text))
    total, section, digit = 0, 0, None
    for ch in text:
        if ch in _CN_DIGITS:
            digit = _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            section += (1 if digit is None else digit) * _CN_UNITS[ch]
            digit = None
        elif ch == "万":
            total += (section + (digit or 0)) * 10000
            section, digit = 0, None
        else:
            return None
    return total + section + (digit or 0)


def title_normalize(text: str) -> str:
    """Collapse every whitespace run (U+3000 included) to one ASCII space and strip separators."""
    text = _WHITESPACE_RUN.sub(" ", text).strip()
    return text.lstrip(_SEPARATORS + " ").strip()


@dataclass(frozen=True)
class Heading:
    kind: str  # "chapter" or "volume"
    marker: str  # 回 / 章 / 节 / 卷
    number: int
    title: str
    line: int
    text: str


@dataclass(frozen=True)
class Rejected:
    line: int
    text: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "reason": self.reason}


def _prefix_ok(prefix: str) -> str | None:
    """None when ``prefix`` may precede a heading, else the reason it may not."""
    if not prefix:
        return None
    if len(prefix) > PREFIX_MAX_CHARS:
        return "标题前的文字过长"
    if any(ch in _SENTENCE_PUNCT for ch in prefix):
        return "标题前有句读标点，像是正文中的提及"
    if prefix[-1].isspace() or prefix[-1] in _PREFIX_CLOSERS or prefix[-1] in _BRACKETS:
        return None
    if prefix.rstrip().endswith(_PREFIX_MARKERS):
        return None
    return "标题号前紧接正文，像是句中提及"


def heading_parse(line: str, *, number: int) -> Heading | Rejected | None:
    """Classify one line: a chapter / volume heading, a rejected look-alike, or ordinary text (None)."""
    stripped = line.strip()
    match = _MARKER.search(stripped, 0, PREFIX_MAX_CHARS + 12)
    if match is None or match.start() > PREFIX_MAX_CHARS:
        return None
    shown = stripped[:REJECTED_TEXT_CHARS]
    if len(stripped) > HEADING_MAX_CHARS:
        return Rejected(number, shown, "行太长，不像标题")
    reason = _prefix_ok(stripped[: match.start()])
    if reason:
        return Rejected(number, shown, reason)
    rest = stripped[match.end() :]
    opener = stripped[match.start() - 1] if match.start() else ""
    if opener in _BRACKETS:
        # 【第一章】 标题 / 【第一章 标题】: drop the bracket pair around the heading.
        closer = _BRACKETS[opener]
        rest = rest[1:] if rest.startswith(closer) else rest.removesuffix(closer)
        rest = rest if not rest or rest[0].isspace() else " " + rest
    if rest and not (rest[0].isspace() or rest[0] in _SEPARATORS or rest[0] in _TITLE_OPENERS):
        return Rejected(number, shown, "标题号后紧接文字，像是句中提及")
    title = title_normalize(rest)
    if "。" in title or any(ch in _QUOTES for ch in title):
        return Rejected(number, shown, "标题含句号或引号，像是正文")
    if len(title) > TITLE_MAX_CHARS:
        return Rejected(number, shown, "标题过长")
    raw_number = match.group("num") or match.group("vnum")
    value = cn_number_parse(raw_number)
    if value is None:
        return Rejected(number, shown, f"无法解析的数字 '{raw_number}'")
    marker = match.group("kind") or "卷"
    kind = "volume" if marker == "卷" else "chapter"
    return Heading(kind=kind, marker=marker, number=value, title=title, line=number, text=stripped)


@dataclass
class TxtChapter:
    number: int
    title: str
    body: str
    line: int
    heading_number: int
    volume: int | None = None

    @property
    def characters(self) -> int:
        return _characters(self.body)


@dataclass
class TxtVolume:
    number: int
    title: str
    line: int
    chapters: list[int] = field(default_factory=list)
    intro_lines: list[str] = field(default_factory=list)

    @property
    def intro(self) -> str:
        """Text between the volume heading and its first chapter."""
        return _paragraphs(self.intro_lines)

    def as_dict(self) -> dict[str, Any]:
        span = [min(self.chapters), max(self.chapters)] if self.chapters else None
        return {
            "number": self.number,
            "name": self.title,
            "chapters": span,
            "line": self.line,
            "intro_characters": _characters(self.intro),
        }


@dataclass
class TxtBook:
    chapters: list[TxtChapter]
    volumes: list[TxtVolume]
    preface: str
    title: str
    marker: str
    duplicates: list[int]
    gaps: list[list[int]]
    rejected: list[Rejected]
    toc_skipped: int
    renumbered: bool
    missing: int = 0
    out_of_range: list[Rejected] = field(default_factory=list)

    @property
    def characters(self) -> int:
        return sum(c.characters for c in self.chapters)

    def report(self) -> dict[str, Any]:
        """The import report (JSON-able): what was found and everything that looks wrong."""
        numbers = [c.number for c in self.chapters]
        return {
            "title": self.title,
            "chapters": len(self.chapters),
            "first_chapter": min(numbers) if numbers else None,
            "last_chapter": max(numbers) if numbers else None,
            "heading_marker": self.marker,
            "volumes": [v.as_dict() for v in self.volumes],
            "duplicates": self.duplicates,
            "gaps": self.gaps,
            "missing": self.missing,
            "out_of_range": [r.as_dict() for r in self.out_of_range],
            "renumbered": self.renumbered,
            "toc_skipped": self.toc_skipped,
            "rejected": [r.as_dict() for r in self.rejected],
            "unassigned_chapters": [c.number for c in self.chapters if c.volume is None] if self.volumes else [],
            "preface_characters": _characters(self.preface),
            "characters": self.characters,
        }


def _characters(text: str) -> int:
    """Non-whitespace characters: the book format's ``word_count``."""
    return sum(1 for ch in text if not ch.isspace())


def _paragraphs(lines: list[str]) -> str:
    # One paragraph per non-empty line, blank-line separated: indentation (spaces, U+3000) would turn
    # into Markdown code blocks. Whitespace never counts as a character, so counts are unchanged.
    return "\n\n".join(s for s in (line.strip() for line in lines) if s)


def _dominant_marker(headings: list[Heading]) -> str:
    counts: dict[str, int] = {}
    for h in headings:
        counts[h.marker] = counts.get(h.marker, 0) + 1
    # 回 before 章 before 节 on a tie: 节 is usually a sub-section inside a chapter.
    return max(counts, key=lambda m: (counts[m], {"回": 2, "章": 1, "节": 0}[m])) if counts else "章"


def txt_parse(text: str, *, renumber: bool = False) -> TxtBook:
    """Split ``text`` into chapters (and volumes, when it has 卷 headings).

    Chapters keep the number of their heading unless ``renumber`` (then 1..N in reading order).
    Headings with the non-dominant marker (e.g. 节 inside a 章 book) stay in the body and are reported.
    """
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    parsed: list[tuple[int, Heading | Rejected | None]] = [
        (i, heading_parse(line, number=i + 1)) for i, line in enumerate(lines)
    ]
    headings = [h for _, h in parsed if isinstance(h, Heading)]
    marker = _dominant_marker([h for h in headings if h.kind == "chapter"])
    rejected = [h for _, h in parsed if isinstance(h, Rejected)]

    preface_lines: list[str] = []
    raw: list[tuple[Heading, list[str], int | None]] = []
    volumes: list[TxtVolume] = []
    current: list[str] = preface_lines
    for i, item in parsed:
        if isinstance(item, Heading) and item.kind == "volume":
            volumes.append(TxtVolume(number=item.number, title=item.title, line=item.line))
            current = volumes[-1].intro_lines
            continue
        if isinstance(item, Heading) and item.marker == marker:
            raw.append((item, [], volumes[-1].number if volumes else None))
            current = raw[-1][1]
            continue
        if isinstance(item, Heading):
            rejected.append(
                Rejected(item.line, item.text[:REJECTED_TEXT_CHARS], f"「{item.marker}」不是本书的章节标记")
            )
        current.append(lines[i])

    # A table of contents: at least two leading headings, all with an empty body but the last (which
    # usually swallowed a "正文" line), whose numbers come back later. They move, verbatim, into the
    # preface.
    toc = 0
    while toc < len(raw) and raw[toc][0].number in {h.number for h, _, _ in raw[toc + 1 :]}:
        toc += 1
        if _paragraphs(raw[toc - 1][1]):
            break
    if toc < 2 or _characters(_paragraphs(raw[toc - 1][1])) > TOC_BODY_MAX_CHARS:
        toc = 0
    for heading, body, _ in raw[:toc]:
        preface_lines += [heading.text, *body]
    raw = raw[toc:]

    seen: set[int] = set()
    duplicates: list[int] = []
    for h, _, _ in raw:
        if h.number in seen and h.number not in duplicates:
            duplicates.append(h.number)
        seen.add(h.number)
    gaps, missing = gaps_find(seen)
    # Renumbered chapters are 1..N whatever their headings said; volume numbers are written as read.
    out_of_range = [
        Rejected(
            h.line,
            h.text[:REJECTED_TEXT_CHARS],
            f"{'卷' if h.kind == 'volume' else '章节'}号 {h.number} 超出范围（1…{NUMBER_MAX:,}）",
        )
        for h in [*(v for v in headings if v.kind == "volume"), *([] if renumber else [h for h, _, _ in raw])]
        if not 1 <= h.number <= NUMBER_MAX
    ]

    chapters = [
        TxtChapter(
            number=index + 1 if renumber else h.number,
            title=h.title,
            body=_paragraphs(body),
            line=h.line,
            heading_number=h.number,
            volume=volume,
        )
        for index, (h, body, volume) in enumerate(raw)
    ]
    for chapter in chapters:
        for volume in volumes:
            if volume.number == chapter.volume:
                volume.chapters.append(chapter.number)

    preface = _paragraphs(preface_lines)
    title = ""
    first = preface.split("\n\n", 1)[0] if preface else ""
    book_title = _BOOK_TITLE_LINE.match(first)
    if book_title:
        # A leading 《书名》 line is the title, not preface.
        title = book_title.group(1).strip()
        preface = preface[len(first) :].strip()
    return TxtBook(
        chapters=chapters,
        volumes=volumes,
        preface=preface,
        title=title,
        marker=marker,
        duplicates=sorted(duplicates),
        gaps=gaps,
        missing=missing,
        out_of_range=sorted(out_of_range, key=lambda r: r.line),
        rejected=sorted(rejected, key=lambda r: r.line),
        toc_skipped=toc,
        renumbered=renumber,
    )


def gaps_find(seen: set[int]) -> tuple[list[list[int]], int]:
    """Missing numbers between the smallest and the largest seen, as ``[first, last]`` ranges (at most
    ``GAP_RANGES_MAX``) and their exact count. Walks the sorted numbers seen, never the range between
    them: a heading 第9223372036854775808章 costs nothing."""
    ordered = sorted(seen)
    ranges: list[list[int]] = []
    missing = 0
    for low, high in zip(ordered, ordered[1:], strict=False):
        if high - low > 1:
            missing += high - low - 1
            if len(ranges) < GAP_RANGES_MAX:
                ranges.append([low + 1, high - 1])
    return ranges, missing


def txt_decode(data: bytes) -> tuple[str, str]:
    """Decode a novel file: UTF-8 (with or without BOM), UTF-16 with BOM, else GB18030.

    Returns (text, encoding name). Raises UnicodeDecodeError when none fits."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8"), "utf-8-sig"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), "utf-16"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("gb18030"), "gb18030"
