"""Reading the Data Agent's extraction JSON: strict decoding (no NaN / Infinity, bounded integers and
depth) and schema errors named by JSON path (``state_changes[2].opp``) with the keys allowed there, in
Chinese. Kept apart from the ingestion service: it is pure (no database) and shared by REST and the CLI."""

import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from entities.schemas import ExtractionIn
from kernel.exceptions import InvalidInput
from kernel.jsonsafe import JsonRefused, json_loads_strict


def extraction_json_load(*, raw: str | bytes) -> dict:
    """Decode an extraction JSON document, or InvalidInput naming the line and column. The API's strict
    parser (kernel/jsonsafe.py): no NaN / Infinity (PostgreSQL's jsonb and SQLite's JSON_VALID refuse
    them), 64-bit integers, bounded depth, no lone surrogates."""
    try:
        data = json_loads_strict(raw)
    except JsonRefused as exc:
        if exc.detail != exc.message:  # a syntax error: say where, as the command line always did
            message = f"抽取 JSON 无效（第 {exc.extra['line']} 行第 {exc.extra['column']} 列）：{exc.detail}"
        else:
            message = f"抽取 JSON 无效：{exc.message}"
        raise InvalidInput(message, extra={"field": "body", **exc.extra}) from exc
    if not isinstance(data, dict):
        raise InvalidInput("抽取 JSON 必须是对象", extra={"field": "body"})
    return data


def _json_path(model: type[BaseModel], loc: tuple) -> tuple[str, type[BaseModel] | None]:
    """``state_changes[2].opp`` for a pydantic error location, and the model of the object the
    location ends in (None inside a free-form dict). Union tags pydantic inserts (``AliasIn``,
    ``str``) are not keys of the payload and are skipped."""
    path, current = "", model
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            continue
        if current is not None:
            fields = {**current.model_fields, **{f.alias: f for f in current.model_fields.values() if f.alias}}
            if part not in fields:
                continue  # a union tag
            current = _inner_model(fields[part].annotation)
        path += f".{part}" if path else part
    return path, current


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _error_text(err: dict) -> str:
    """pydantic's English message in Chinese for the common cases (the author reads it)."""
    ctx = err.get("ctx") or {}
    texts = {
        "greater_than_equal": lambda: f"应 ≥ {ctx.get('ge')}",
        "less_than_equal": lambda: f"应 ≤ {ctx.get('le')}",
        "finite_number": lambda: "应为有限数（不能是 NaN 或 Infinity）",
        "missing": lambda: "缺少此字段",
        "int_type": lambda: "应为整数",
        "int_parsing": lambda: "应为整数",
        "int_from_float": lambda: "应为整数",
        "float_type": lambda: "应为数字",
        "float_parsing": lambda: "应为数字",
        "string_type": lambda: "应为字符串",
        "list_type": lambda: "应为列表",
        "dict_type": lambda: "应为对象",
        "model_type": lambda: "应为对象",
        "string_too_short": lambda: "不能为空",
        "string_too_long": lambda: f"至多 {ctx.get('max_length')} 个字符",
        "literal_error": lambda: f"应为 {ctx.get('expected')}",
        "value_error": lambda: str(err["msg"]).removeprefix("Value error, "),
    }
    return texts[err["type"]]() if err["type"] in texts else err["msg"]


def extraction_validate(payload: dict) -> ExtractionIn:
    """The payload as ExtractionIn, or a 422 naming each bad path (``state_changes[2].opp``); an
    unknown key also lists the keys allowed there. Nothing has been written yet."""
    try:
        return ExtractionIn.model_validate(payload)
    except ValidationError as exc:
        raw = exc.errors(include_url=False)
        unknown = [e for e in raw if e["type"] == "extra_forbidden"]
        errors = []
        for err in unknown or raw:
            path, holder = _json_path(ExtractionIn, tuple(err["loc"][:-1]) if unknown else tuple(err["loc"]))
            if unknown:
                key = str(err["loc"][-1])
                path = f"{path}.{key}" if path else key
                allowed = [f.alias or n for n, f in (holder or ExtractionIn).model_fields.items()]
                errors.append({"field": path, "error": f"未知字段，可选：{'、'.join(allowed)}", "allowed": allowed})
            else:
                errors.append({"field": path, "error": _error_text(err)})
        if unknown:
            first = errors[0]
            raise InvalidInput(
                f"抽取 JSON 有未知字段：{'、'.join(e['field'] for e in errors)}（{first['field']} 所在对象可用的字段："
                f"{'、'.join(first['allowed'])}）；未做任何改动",
                extra={"errors": errors},
            ) from exc
        # A union (``str | AliasIn``) reports each member; keep the deepest, the one that says what is wrong.
        errors = [
            e for e in errors if not any(o["field"].startswith((e["field"] + ".", e["field"] + "[")) for o in errors)
        ]
        detail = "；".join(f"{e['field']} {e['error']}" for e in errors[:5])
        raise InvalidInput(f"抽取 JSON 字段无效：{detail}；未做任何改动", extra={"errors": errors}) from exc
