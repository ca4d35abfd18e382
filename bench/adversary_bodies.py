"""Hostile request bodies and requests of the API door (issue 19: items 4, 8, 10, 12 and the low items),
as data: each case is a method, a path under one book, the body bytes, the key it is sent with and the
status it must get. ``cases_replay`` sends them to a Django test ``Client`` (in process) or to a base
URL (a live gunicorn) and says, per case, what came back and whether the database is unchanged.

``tests/hardening/test_adversary_bodies.py`` replays every case in the suite; ``bench/bench_adversary.py``
imports this module for its report. Paths use ``{book}`` for the book under attack and ``{other}`` for a
second book the key must not open (cases that need one are skipped when ``other`` is not given).
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

FACT = {"category": "world_rules", "subject": "灵气", "field": "浓度", "value": "稀薄", "chapter": 1}
FACTS = "/api/books/{book}/memory/facts"
EXTRACTION = "/api/books/{book}/chapters/1/extraction"
IMPORT = "/api/books/{book}/memory/import"


def _fact(**override: Any) -> dict[str, Any]:
    return {**FACT, **override}


def _raw_fact(field: str, literal: str) -> bytes:
    """A fact whose ``field`` is the raw JSON text ``literal`` (json.dumps cannot write NaN's siblings)."""
    body = json.dumps(_fact(**{field: "__X__"}), ensure_ascii=False)
    return body.replace('"__X__"', literal).encode("utf-8")


def _nested_object(depth: int) -> bytes:
    return ('{"a": ' * depth + "1" + "}" * depth).encode()


def _case(name: str, method: str, path: str, body: bytes | None, expect: int, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "method": method,
        "path": path,
        "body": body,
        "content_type": more.pop("content_type", "application/json"),
        "auth": more.pop("auth", "write"),  # "write" | "read" | None (no key)
        "expect": expect,
        "message": more.pop("message", None),  # a substring the answer's message must contain
        "writes": more.pop("writes", False),  # True: the case is meant to change the database
        "headers": more.pop("headers", {}),
        **more,
    }


REQUEST_CASES: list[dict[str, Any]] = [
    # ── control: a good write changes the database, the others must not ──
    _case("good fact (control)", "POST", FACTS, json.dumps(FACT).encode(), 201, writes=True),
    # ── nesting: RecursionError before auth on every POST, and deep objects ──
    _case("'[' x 1000, no key", "POST", FACTS, b"[" * 1000, 401, auth=None, message="需要认证"),
    _case("'[' x 1000", "POST", FACTS, b"[" * 1000, 422, message="嵌套过深"),
    _case("'[' x 100000", "POST", FACTS, b"[" * 100_000, 422, message="超过 64 层"),
    _case("'[' x 1000 on refresh, read key", "POST", "/api/books/{book}/memory/refresh", b"[" * 1000, 403, auth="read"),
    _case("object nested 65 deep", "POST", FACTS, _nested_object(65), 422, message="body.a.a"),
    _case("object nested 64 deep passes the parser", "POST", FACTS, _nested_object(64), 422, message="参数无效"),
    _case("object nested 5000 deep", "POST", FACTS, _nested_object(5000), 422, message="嵌套过深"),
    _case("extraction '[' x 1000", "POST", EXTRACTION, b"[" * 1000, 422, message="嵌套过深"),
    _case("memory import nested 200 deep", "POST", IMPORT, b'{"facts": ' + b"[" * 200 + b"]" * 200 + b"}", 422),
    # ── NaN / Infinity: not JSON (SQLite's JSON_VALID refused them as a 500) ──
    _case("NaN confidence", "POST", FACTS, _raw_fact("confidence", "NaN"), 400, message="NaN 不是 JSON 数值"),
    _case("Infinity confidence", "POST", FACTS, _raw_fact("confidence", "Infinity"), 400, message="body.confidence"),
    _case("-Infinity confidence", "POST", FACTS, _raw_fact("confidence", "-Infinity"), 400),
    _case(
        "NaN deep in evidence",
        "POST",
        FACTS,
        _raw_fact("evidence", '[{"x": [1, NaN]}]'),
        400,
        message="body.evidence[0].x[1]",
    ),
    _case("1e400 (overflows to inf)", "POST", FACTS, _raw_fact("confidence", "1e400"), 422, message="超出浮点数范围"),
    _case("NaN in memory import", "POST", IMPORT, b'{"facts": [{"confidence": NaN}]}', 400),
    _case(
        "NaN in an extraction", "POST", EXTRACTION, b'{"entities_appeared": [{"confidence": NaN}]}', 422, message="NaN"
    ),
    # ── integers: 5,000 digits hit Python's int-str limit (ValueError), past 2^63 the database's ──
    _case("5000-digit chapter", "POST", FACTS, _raw_fact("chapter", "9" * 5000), 422, message="（5000 位）"),
    _case(
        "5000-digit integer in an extraction",
        "POST",
        EXTRACTION,
        b'{"scenes": [{"index": ' + b"1" * 5000 + b"}]}",
        422,
        message="整数超出范围",
    ),
    _case("chapter 2^63", "POST", FACTS, _raw_fact("chapter", str(2**63)), 422, message="body.chapter"),
    _case("chapter -2^63-1", "POST", FACTS, _raw_fact("chapter", str(-(2**63) - 1)), 422),
    # ── strings that no database column can hold ──
    _case("lone surrogate in a value", "POST", FACTS, _raw_fact("value", '"\\ud800"'), 422, message="代理字符"),
    _case(
        "lone low surrogate in subject", "POST", FACTS, _raw_fact("subject", '"a\\udfffb"'), 422, message="body.subject"
    ),
    _case("lone surrogate in a key", "POST", FACTS, b'{"\\ud800": 1}', 422, message="的键"),
    _case("surrogate pair is fine", "POST", FACTS, _raw_fact("subject", '"\\ud83c\\udc04"'), 201, writes=True),
    _case("NUL in a value", "POST", FACTS, _raw_fact("value", '"a\\u0000b"'), 422, message="NUL"),
    _case(
        "lone surrogate in an extraction",
        "POST",
        EXTRACTION,
        b'{"scenes": [{"index": 1, "summary": "\\ud800"}]}',
        422,
        message="代理字符",
    ),
    _case("lone surrogate in memory import", "POST", IMPORT, b'{"facts": [{"value": "\\udbff"}]}', 422),
    # ── not JSON, not UTF-8, not an object ──
    _case("truncated JSON", "POST", FACTS, b'{"category": ', 400, message="第 1 行"),
    _case("invalid UTF-8", "POST", FACTS, b'{"value": "\xff"}', 400, message="不是 UTF-8"),
    _case("UTF-16 body", "POST", FACTS, json.dumps(FACT).encode("utf-16"), 400, message="不是 UTF-8"),
    _case("array body", "POST", FACTS, b"[1, 2]", 422, message="必须是 JSON 对象（收到数组）"),
    _case("null body", "POST", FACTS, b"null", 422, message="收到null"),
    # ── auth order and scope ──
    _case("read key writes", "POST", FACTS, json.dumps(FACT).encode(), 403, auth="read", message="只有读权限"),
    _case("no key, NaN body", "POST", FACTS, _raw_fact("confidence", "NaN"), 401, auth=None),
    _case(
        "scoped key, other book",
        "POST",
        "/api/books/{other}/memory/facts",
        json.dumps(FACT).encode(),
        403,
        auth="scoped",
        message="不能访问书籍",
    ),
    _case(
        "scoped key, other book under /novel",
        "POST",
        "/api/books/{other}/memory/facts",
        json.dumps(FACT).encode(),
        403,
        auth="scoped",
        script_name="/novel",
        message="不能访问书籍",
    ),
    _case(
        "scoped key, other book read under /novel",
        "GET",
        "/api/books/{other}/chapters/1",
        None,
        403,
        auth="scoped",
        script_name="/novel",
    ),
    _case(
        "repeated query parameter, no key",
        "GET",
        "/api/books/{book}/memory/facts?status=a&status=b",
        None,
        401,
        auth=None,
    ),
    _case(
        "repeated query parameter",
        "GET",
        "/api/books/{book}/memory/facts?status=a&status=b",
        None,
        422,
        message="参数重复",
    ),
]


def db_fingerprint() -> str:
    """A digest of every row of the product's apps (API keys and sessions aside; no timestamps): equal
    digests mean nothing was written. Needs Django set up against the database under attack."""
    from django.apps import apps
    from django.db import models

    digest = hashlib.sha256()
    for label in ("webnovel", "entities", "threads", "storysystem", "memory"):
        for model in sorted(apps.get_app_config(label).get_models(), key=lambda m: m._meta.label):
            if model._meta.model_name == "apikey":
                continue
            fields = [
                f.attname
                for f in model._meta.concrete_fields
                if not isinstance(f, models.DateTimeField | models.DateField)
            ]
            digest.update(model._meta.label.encode())
            for row in model.objects.order_by("pk").values_list(*fields):
                digest.update(json.dumps(row, ensure_ascii=False, default=str).encode())
    return digest.hexdigest()


def _answer(status: int, content: bytes, headers: dict[str, str]) -> dict[str, Any]:
    try:
        body = json.loads(content, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        json_valid = True
    except ValueError:
        body, json_valid = None, False
    message = body.get("message") if isinstance(body, dict) else None
    return {"status": status, "json_valid": json_valid, "message": message, "retry_after": headers.get("retry-after")}


def _send_client(client: Any, case: dict[str, Any], url: str, key: str | None) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if key:
        extra["HTTP_X_API_KEY"] = key
    if case.get("script_name"):
        extra["SCRIPT_NAME"] = case["script_name"]
    for name, value in case["headers"].items():
        extra["HTTP_" + name.upper().replace("-", "_")] = value
    if case["method"] == "GET":
        response = client.get(url, **extra)
    else:
        response = client.generic(
            case["method"], url, data=case["body"] or b"", content_type=case["content_type"], **extra
        )
    headers = {k.lower(): v for k, v in response.headers.items()}
    return _answer(response.status_code, response.content, headers)


def _send_url(base_url: str, case: dict[str, Any], url: str, key: str | None) -> dict[str, Any]:
    # A live server is mounted where it is mounted: the script_name of a case only applies in process.
    headers = {"Content-Type": case["content_type"], **case["headers"]}
    if key:
        headers["X-API-Key"] = key
    request = urllib.request.Request(
        base_url.rstrip("/") + url, data=case["body"], method=case["method"], headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return _answer(response.status, response.read(), {k.lower(): v for k, v in response.headers.items()})
    except urllib.error.HTTPError as exc:
        return _answer(exc.code, exc.read(), {k.lower(): v for k, v in exc.headers.items()})


def cases_replay(
    target: Any,
    *,
    keys: dict[str, str],
    book: str = "demo-book",
    other: str | None = None,
    cases: list[dict[str, Any]] | None = None,
    snapshot: Callable[[], str] | None = db_fingerprint,
) -> list[dict[str, Any]]:
    """Send every case to ``target`` (a Django test ``Client`` or a base URL such as
    ``http://127.0.0.1:8000``) with ``keys`` (``{"write": raw, "read": raw, "scoped": raw}``; a key
    scoped to ``book``) and return, per case: the status, whether it is the expected one, the answer's
    message, whether the answer is valid JSON, and whether the database is unchanged (``snapshot``
    before and after; None when no snapshot is taken)."""
    results = []
    for case in cases if cases is not None else REQUEST_CASES:
        if "{other}" in case["path"] and other is None:
            continue
        auth = case["auth"]
        if auth is not None and auth not in keys:
            continue
        url = case["path"].format(book=book, other=other)
        before = snapshot() if snapshot else None
        if isinstance(target, str):
            answer = _send_url(target, case, url, keys.get(auth) if auth else None)
        else:
            answer = _send_client(target, case, url, keys.get(auth) if auth else None)
        unchanged = (snapshot() == before) if snapshot else None
        message_ok = case["message"] is None or case["message"] in (answer["message"] or "")
        results.append(
            {
                "name": case["name"],
                "method": case["method"],
                "path": url,
                **answer,
                "expect": case["expect"],
                "ok": answer["status"] == case["expect"] and message_ok and answer["json_valid"],
                "unchanged": unchanged,
                "writes": case["writes"],
            }
        )
    return results
