"""Strict JSON for request bodies: what Python's ``json`` accepts but the database or a client cannot.

``json.loads`` takes ``NaN`` / ``Infinity`` (not JSON; SQLite's ``JSON_VALID`` check and every other
parser refuse them), ``1e400`` (becomes ``inf``), integers of thousands of digits (``ValueError`` past
Python's int-string limit, and past the database's 64 bits long before), strings holding lone
surrogates ``"\\ud800"`` (cannot be encoded to UTF-8: ``UnicodeEncodeError`` at the database) or NUL
(PostgreSQL text refuses it), and recurses once per nesting level (``RecursionError`` at ~1,000).
``json_loads_strict`` parses once with hooks that mark the bad values instead of raising, then walks
the result iteratively, so every refusal names the JSON path (``body.scenes[2].summary``) where the
value sits. Kernel module: no Django, used by the API's parser and by every command that reads JSON
from a caller.
"""

import json
import math
import re
from typing import Any

from kernel.exceptions import InvalidInput

JSON_MAX_DEPTH = 64
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
# Longer digit strings are not converted at all (the conversion itself is quadratic in CPython).
_INT_MAX_DIGITS = 20
_BAD_CHAR = re.compile(r"[\ud800-\udfff\x00]")
_PATH_SHOWN = 120


class JsonRefused(InvalidInput):
    """A request body that is not acceptable JSON; ``status_code`` 400 when it is not JSON at all."""

    def __init__(self, message: str, *, extra: Any = None, status: int = 422, detail: str = "") -> None:
        super().__init__(message, extra=extra)
        self.status_code = status
        self.detail = detail or message  # the message without "请求体…" and the position


class _Marked:
    """A value the hooks refused, kept in place so the walk can say where it sits."""

    __slots__ = ("text", "kind")

    def __init__(self, text: str, kind: str) -> None:
        self.text, self.kind = text, kind


def _int(text: str) -> Any:
    if len(text.lstrip("-")) > _INT_MAX_DIGITS:
        return _Marked(text, "int")
    value = int(text)
    return value if INT_MIN <= value <= INT_MAX else _Marked(text, "int")


def _float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else _Marked(text, "float")


def _constant(text: str) -> Any:
    return _Marked(text, "constant")


def _shown(path: str) -> str:
    return path if len(path) <= _PATH_SHOWN else path[:_PATH_SHOWN] + "…"


def _location(raw: str, index: int) -> tuple[int, int]:
    line = raw.count("\n", 0, index) + 1
    return line, index - (raw.rfind("\n", 0, index) + 1) + 1


def _depth_exceeded_at(text: str) -> int | None:
    """The index of the bracket that opens level JSON_MAX_DEPTH + 1, skipping strings (linear, C regex)."""
    depth = 0
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > JSON_MAX_DEPTH:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


def _too_deep(text: str) -> JsonRefused:
    index = _depth_exceeded_at(text)
    extra: dict[str, Any] = {"max_depth": JSON_MAX_DEPTH}
    where = ""
    if index is not None:
        line, column = _location(text, index)
        extra.update(line=line, column=column)
        where = f"（第 {line} 行第 {column} 列）"
    return JsonRefused(f"请求体嵌套过深：超过 {JSON_MAX_DEPTH} 层{where}", extra=extra)


def _path(root: str, trail: tuple | None) -> str:
    parts = []
    while trail is not None:
        trail, key, in_object = trail
        parts.append(f".{key}" if in_object else f"[{key}]")
    return root + "".join(reversed(parts))


def _check(value: Any, root: str, *, strings: bool) -> None:
    """Walk the parsed document without recursion; raise at the first refused value. Paths are
    built only for the value refused (a trail of parent links), so a 10 MB body stays linear and
    cheap; ``strings`` False skips the string scan (no ``\\u`` escape in the text: a lone surrogate
    or a NUL cannot be there, since UTF-8 decoding and the JSON grammar refuse them raw)."""
    if not isinstance(value, dict | list):
        if isinstance(value, _Marked):
            _bad_number(value, root)
        if strings and isinstance(value, str) and _BAD_CHAR.search(value):
            _bad_string(value, root)
        return
    stack: list[tuple[Any, tuple | None, int]] = [(value, None, 0)]
    while stack:
        node, trail, depth = stack.pop()
        in_object = isinstance(node, dict)
        for key, item in node.items() if in_object else enumerate(node):
            kind = type(item)
            if kind is str:
                if strings and _BAD_CHAR.search(item):
                    _bad_string(item, _path(root, (trail, key, in_object)))
            elif kind is dict or kind is list:
                if depth + 1 >= JSON_MAX_DEPTH:
                    where = _shown(_path(root, (trail, key, in_object)))
                    raise JsonRefused(
                        f"请求体嵌套过深：超过 {JSON_MAX_DEPTH} 层（位置 {where}）",
                        extra={"path": where, "max_depth": JSON_MAX_DEPTH},
                    )
                if item:
                    stack.append((item, (trail, key, in_object), depth + 1))
            elif kind is _Marked:
                _bad_number(item, _path(root, (trail, key, in_object)))
            if in_object and strings and _BAD_CHAR.search(key):
                _bad_string(key, f"{_path(root, trail)} 的键")


def _bad_string(text: str, where: str) -> None:
    char = _BAD_CHAR.search(text).group()
    if char == "\x00":
        message = f"字符串不能含 NUL 字符（\\u0000）（位置 {_shown(where)}）"
    else:
        message = f"字符串含不成对的 UTF-16 代理字符 \\u{ord(char):04x}，不是合法的 Unicode（位置 {_shown(where)}）"
    raise JsonRefused(message, extra={"path": _shown(where)})


def _bad_number(marked: _Marked, where: str) -> None:
    extra = {"path": _shown(where)}
    if marked.kind == "constant":
        raise JsonRefused(
            f"请求体不是合法的 JSON：{marked.text} 不是 JSON 数值（位置 {_shown(where)}）", extra=extra, status=400
        )
    if marked.kind == "float":
        raise JsonRefused(f"数值超出范围：{marked.text[:40]} 超出浮点数范围（位置 {_shown(where)}）", extra=extra)
    digits = marked.text if len(marked.text) <= 40 else f"{marked.text[:20]}…（{len(marked.text)} 位）"
    raise JsonRefused(f"整数超出范围：{digits}（允许 {INT_MIN} … {INT_MAX}；位置 {_shown(where)}）", extra=extra)


def json_loads_strict(raw: str | bytes, *, root: str = "body") -> Any:
    """Parse ``raw`` as JSON or raise ``JsonRefused`` (400: not JSON / not UTF-8; 422: a value no
    database column can hold), naming the line and column or the JSON path."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonRefused(
                f"请求体不是 UTF-8 文本：第 {exc.start} 个字节无法解码", extra={"byte": exc.start}, status=400
            ) from exc
    else:
        text = raw
    if text.startswith("\ufeff"):
        text = text[1:]  # a BOM some editors write: not content
    try:
        value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise JsonRefused(
            f"请求体不是合法的 JSON：第 {exc.lineno} 行第 {exc.colno} 列（{exc.msg}）",
            extra={"line": exc.lineno, "column": exc.colno},
            status=400,
            detail=exc.msg,
        ) from exc
    except RecursionError:
        raise _too_deep(text) from None
    _check(value, root, strings="\\u" in text)
    return value
