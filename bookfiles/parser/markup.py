"""Text-level helpers: front matter, `##` sections, Chinese numerals, entity tags, tables."""

import datetime
import math
import re
from typing import Any

import yaml

try:  # libyaml is ~10x faster; the pure-Python loader gives the same results
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_UNITS = {"十": 10, "百": 100, "千": 1000}
NUMERAL = r"[0-9０-９零〇一二两三四五六七八九十百千万]+"


class FrontMatterError(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def numeral_parse(text: str) -> int | None:
    """'12', '０１２', '十二', '一百零三', '两千' → int; anything else → None."""
    text = text.strip()
    if not text:
        return None
    if text.isdigit():
        try:
            return int(text)  # int() accepts full-width digits too
        except ValueError:
            return None
    total, section, digit = 0, 0, None
    for char in text:
        if char in _DIGITS:
            digit = _DIGITS[char]
        elif char in _UNITS:
            section += (1 if digit is None else digit) * _UNITS[char]
            digit = None
        elif char == "万":
            total += (section + (digit or 0)) * 10000
            section, digit = 0, None
        else:
            return None
    return total + section + (digit or 0)


def yaml_load(text: str) -> Any:
    """yaml.safe_load (libyaml when available). Raises yaml.YAMLError.

    Anchors and aliases (``&a`` / ``*a``) are refused: a book never needs them, and they let a few
    lines expand into billions of values ("billion laughs") or a list that contains itself."""
    if "*" in text and "&" in text:  # cheap pre-check; the event scan runs only when both appear
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent):
                raise yaml.MarkedYAMLError(
                    problem="不支持 YAML 锚点与别名（&名 / *名），请直接写出值", problem_mark=event.start_mark
                )
    data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader
    _values_check(data, text)
    return data


YAML_MAX_DEPTH = 100
# Where a bad value sits in the text, to name its line (the loaded data has no positions).
_NON_FINITE = re.compile(r"[-+]?\.(?:nan|NaN|NAN|inf|Inf|INF)\b|\d\.?\d*[eE]\+?\d{3,}")
_NUL_ESCAPE = re.compile(r"\\0|\\x00|\\u0000|\\U00000000|\x00")


def _line_of(text: str, pattern: re.Pattern) -> int:
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) if match else 0


def _refuse(text: str, problem: str, pattern: re.Pattern) -> None:
    line = _line_of(text, pattern)
    raise yaml.MarkedYAMLError(problem=problem, problem_mark=yaml.Mark("<yaml>", 0, line, 0, None, None))


def _values_check(data: Any, text: str) -> None:
    """Refuse what the database cannot store or recursive code cannot walk, with the line it is on:
    absurd nesting (``[[[[…]]]]``), ``.nan`` / ``.inf`` (not JSON: the JSON columns refuse them), and
    NUL characters from an escape such as ``"\\0"`` (PostgreSQL text refuses them)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > YAML_MAX_DEPTH:
            raise yaml.YAMLError(f"YAML 嵌套超过 {YAML_MAX_DEPTH} 层")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
            stack.extend((k, depth + 1) for k in value if isinstance(k, str))
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, float) and not math.isfinite(value):
            _refuse(text, f"不支持的数值 {value}（.nan / .inf 不是有效数值）", _NON_FINITE)
        elif isinstance(value, str) and "\x00" in value:
            _refuse(text, "值中含 NUL 字符（\\0）", _NUL_ESCAPE)


def yaml_error_line(exc: yaml.YAMLError, offset: int = 0) -> int | None:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return None
    return mark.line + 1 + offset


def yaml_error_message(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    parts = [p for p in (context, problem) if p]
    return "；".join(parts) if parts else str(exc).splitlines()[0]


def front_matter_split(text: str) -> tuple[dict[str, Any], str, str, int]:
    """Split a Markdown file into (front matter, raw front matter, body, body's first line number).

    Raises FrontMatterError with the file line of the problem (the opening ``---`` is line 1).
    """
    if not text.startswith("---"):
        return {}, "", text, 1
    first_nl = text.find("\n")
    if first_nl == -1 or text[:first_nl].rstrip() != "---":
        return {}, "", text, 1
    # the closing delimiter: a line that is exactly '---' (or '...')
    match = re.search(r"^(?:---|\.\.\.)[ \t]*\r?$", text[first_nl + 1 :], re.MULTILINE)
    if match is None:
        raise FrontMatterError("front matter 没有结束的 '---' 行", 1)
    fm_text = text[first_nl + 1 : first_nl + 1 + match.start()]
    rest_start = first_nl + 1 + match.end()
    body = text[rest_start:]
    if body.startswith("\r\n"):
        body = body[2:]
    elif body.startswith("\n"):
        body = body[1:]
    body_line = fm_text.count("\n") + 3
    try:
        data = yaml_load(fm_text)
    except yaml.YAMLError as exc:
        raise FrontMatterError(yaml_error_message(exc), yaml_error_line(exc, offset=1)) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontMatterError("front matter 必须是键值映射（key: value）", 2)
    return jsonable(data), fm_text, body, body_line


def jsonable(value: Any) -> Any:
    """YAML may yield dates, sets and non-string keys; JSON fields need plain values."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        # a !!set may mix types ({1, a}): order by type, then text, so sorting never compares int with str
        return [jsonable(v) for v in sorted(value, key=lambda v: (type(v).__name__, str(v)))]
    if isinstance(value, datetime.date | datetime.datetime | datetime.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def key_line(fm_text: str, key: str, *, needle: str | None = None) -> int | None:
    """File line (1-based, with the opening '---' as line 1) where ``key`` (or ``needle``) appears."""
    for index, line in enumerate(fm_text.split("\n")):
        stripped = line.lstrip()
        if needle is not None:
            if needle in line:
                return index + 2
        elif stripped.startswith(f"{key}:") or stripped.startswith(f"{key} :"):
            return index + 2
    return None


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")


def sections_split(body: str, *, first_line: int = 1) -> list[tuple[str, str, int]]:
    """Split Markdown by ``##`` headings → [(heading, stripped body, file line of the body's first
    line)]. The preface (text before the first ``##``) has heading '' and is kept only when it has
    text. ``###`` and deeper stay inside their section; headings inside code fences do not count."""
    out: list[tuple[str, str, int]] = []

    def close(heading: str, buf: list[str], content_line: int) -> None:
        raw = "\n".join(buf)
        text = raw.strip()
        if heading or text:
            lead = raw[: len(raw) - len(raw.lstrip())]
            out.append((heading, text, content_line + lead.count("\n")))

    heading, content_line, buf = "", first_line, []
    in_fence = False
    for index, line in enumerate(body.split("\n")):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if not in_fence and line.startswith("##") and not line.startswith("###"):
            match = _HEADING.match(line)
            if match:
                close(heading, buf, content_line)
                heading, content_line, buf = match.group(2).strip(), first_line + index + 1, []
                continue
        buf.append(line)
    close(heading, buf, content_line)
    return out


def title_from_markdown(body: str) -> str:
    for line in body.split("\n", 20)[:20]:
        if line.startswith("# "):
            return line[2:].strip()
    return ""


# Manual entity tags: self-closing <entity …/> and <entity-alias …/>, and paired
# <entity …>…</entity> / <entity-update …>…</entity-update> (possibly over several lines).
# A head holds no "<" or ">" (so a run of unclosed heads is scanned once, not once per head).
_TAG_HEAD = re.compile(r"<(entity-update|entity-alias|entity)(?=[\s/>])[^<>]*>")
_TAG_CLOSE = re.compile(r"</(entity-update|entity-alias|entity)\s*>")
_BLANK_TO_EOL = re.compile(r"[^\S\n]*(?:\n|\Z)")


def entity_tag_spans(body: str) -> list[tuple[int, int]]:
    """(start, end) of every manual entity tag in ``body``, in one pass. A paired head takes the first
    closing tag of its kind before the next head; a head left unclosed is a tag on its own (the
    finalize reports it), so it can never swallow the prose up to some later closing tag.

    Linear in the text by construction (the old single regex rescanned the rest of the text for every
    unclosed head: 20,000 of them took half a minute): heads and closings are found by two linear
    scans, then paired by walking both lists once."""
    heads = list(_TAG_HEAD.finditer(body))
    closes: dict[str, list[tuple[int, int]]] = {"entity": [], "entity-update": [], "entity-alias": []}
    for m in _TAG_CLOSE.finditer(body):
        closes[m.group(1)].append((m.start(), m.end()))
    cursor = dict.fromkeys(closes, 0)
    spans = []
    for index, head in enumerate(heads):
        start, end, kind = head.start(), head.end(), head.group(1)
        if not head.group(0).endswith("/>"):
            limit = heads[index + 1].start() if index + 1 < len(heads) else len(body)
            found, i = closes[kind], cursor[kind]
            while i < len(found) and found[i][0] < end:
                i += 1
            cursor[kind] = i
            if i < len(found) and found[i][1] <= limit:
                end = found[i][1]
        spans.append((start, end))
    return spans


def entity_tags_strip(body: str, *, first_line: int = 1) -> tuple[str, list[dict[str, Any]]]:
    """Remove manual entity tags from a chapter body → (clean body, [{"line", "text"}]). A tag that
    sits alone on its line takes the line with it, so the prose keeps its paragraphs."""
    if "<entity" not in body:
        return body, []
    tags: list[dict[str, Any]] = []
    pieces: list[str] = []
    pos = 0
    # line bookkeeping advances with the tags (a per-tag count from the top would be quadratic)
    counted, line, line_start = 0, first_line, 0
    for start, end in entity_tag_spans(body):
        newlines = body.count("\n", counted, start)
        if newlines:
            line += newlines
            line_start = body.rfind("\n", counted, start) + 1
        counted = start
        tags.append({"line": line, "text": body[start:end]})
        alone = line_start >= pos and not body[line_start:start].strip()
        tail = _BLANK_TO_EOL.match(body, end) if alone else None
        if tail is not None:
            pieces.append(body[pos:line_start])
            pos = tail.end()
        else:
            pieces.append(body[pos:start])
            pos = end
    pieces.append(body[pos:])
    return "".join(pieces), tags


def nonspace_count(text: str) -> int:
    return len("".join(text.split()))


_PRESENT_SPLIT = re.compile(r"[、，,/／]")


def table_rows(body: str, *, first_line: int = 1) -> list[tuple[dict[str, str], int]]:
    """Rows of the Markdown tables in ``body`` as {header: cell} dicts with their file line."""
    rows: list[tuple[dict[str, str], int]] = []
    header: list[str] | None = None
    separator_seen = False
    for index, raw in enumerate(body.split("\n")):
        line = raw.strip()
        if not line.startswith("|"):
            header, separator_seen = None, False
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if not separator_seen and all(re.fullmatch(r":?-{2,}:?", c or "--") for c in cells):
            separator_seen = True
            continue
        rows.append(({h: (cells[i] if i < len(cells) else "") for i, h in enumerate(header)}, first_line + index))
    return rows


def names_split(text: str) -> list[str]:
    return [p.strip() for p in _PRESENT_SPLIT.split(text) if p.strip()]
