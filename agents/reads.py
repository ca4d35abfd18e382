"""Read tools, generated from the read registry (``kernel.interfaces``): one function turns an
``Interface`` into an MCP tool, one dispatcher calls it. Nothing here is written per read, so a new
read (or a new field of ``Arg``, like bounds) reaches the agents without touching this module beyond
``arg_json_schema``, the one place an argument becomes JSON Schema."""

import json
import re
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from kernel.exceptions import InvalidInput
from kernel.interfaces import Arg, Interface
from kernel.responses import response_union

_JSON_TYPES: dict[type, str] = {int: "integer", bool: "boolean", str: "string", float: "number"}

# What an agent would use each group of reads for: the "when to call it" of a tool's description.
GROUP_USES: dict[str, str] = {
    "章节": "写作、审稿或回答读者问题前，查已定稿章节",
    "大纲": "规划下一章前，查总纲与卷纲",
    "时间线": "核对事件先后与角色行程时",
    "设定": "写到某个角色、地点或世界规则时，查它的设定",
    "搜索": "要找某个词句、伏笔或名字在哪些章出现过时",
    "报告": "阶段性自查（节奏、钩子、文风、线索）时",
    "实体": "写到某个人物 / 地点 / 物品时，查它在某章的状态、别名与关系",
    "线索": "安排伏笔、悬念、感情线的推进或收尾时",
    "信息差": "写到秘密、谁知道什么时",
    "记忆": "准备写下一章、需要上下文包或记忆事实时",
    "故事系统": "确定题材套路、节奏与禁忌（Story System）时",
}


# Bounds and other constraints an ``Arg`` may carry (the read declaration grows them): JSON Schema
# keyword → Arg attribute. Attributes an ``Arg`` does not have yet are simply absent.
def arg_json_schema(arg: Arg) -> dict[str, Any]:
    """The JSON Schema of one argument: type, choices, default, bounds and help, from its declaration."""
    item: dict[str, Any] = {"type": _JSON_TYPES.get(arg.type, "string"), **arg.limits()}
    schema = {"type": "array", "items": item} if arg.many else item
    if arg.help:
        schema["description"] = arg.help
    if arg.default is not None:
        schema["default"] = list(arg.default) if arg.many and isinstance(arg.default, tuple) else arg.default
    return schema


def interface_input_schema(spec: Interface) -> dict[str, Any]:
    """The tool's input schema: an object of the interface's arguments (the book is the server's)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {arg.name: arg_json_schema(arg) for arg in spec.all_args()},
        "additionalProperties": False,
    }
    required = [arg.name for arg in spec.all_args() if arg.required]
    if required:
        schema["required"] = required
    return schema


# The keywords of a JSON Schema object whose values are one schema, a list of schemas, or a dict of them.
_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_NAMED = ("properties", "patternProperties", "$defs")
_REF = re.compile(r'"#/\$defs/([^"]+)"')


def schema_lean(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema, cheaper to check: every host's client validates each answer against it (the SDK's
    with ``jsonschema``: ~0.1 ms per row of a long list), and the cost is in ``$ref`` lookups and ``anyOf``
    branches. A ``$ref`` to a definition is replaced by the definition (kept as a ``$ref`` where it refers to
    itself), and an ``anyOf`` of bare types (pydantic's ``X | None``) becomes one ``type`` list: both are
    the same constraint in JSON Schema, titles and descriptions are kept."""
    defs = schema.get("$defs", {})

    def lean(node: Any, open_refs: tuple[str, ...]) -> Any:
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
            name = ref.removeprefix("#/$defs/")
            if name in defs and name not in open_refs:
                return lean(defs[name], (*open_refs, name))
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$defs":
                continue
            if key in _ONE and isinstance(value, dict):
                out[key] = lean(value, open_refs)
            elif key in _MANY and isinstance(value, list):
                out[key] = [lean(v, open_refs) for v in value]
            elif key in _NAMED and isinstance(value, dict):
                out[key] = {k: lean(v, open_refs) for k, v in value.items()}
            else:
                out[key] = value
        branches = out.get("anyOf")
        if "type" not in out and branches and all(list(b) == ["type"] and isinstance(b["type"], str) for b in branches):
            types_ = [b["type"] for b in out.pop("anyOf")]
            out = {"type": types_, **out}
        return out

    result = lean(schema, ())
    # The definitions still referred to (one that refers to itself, or a $ref where no keyword above reaches).
    kept: dict[str, Any] = {}
    while missing := {n for n in _REF.findall(json.dumps([result, kept])) if n in defs} - set(kept):
        kept |= {name: lean(defs[name], (name,)) for name in sorted(missing)}
    return {**result, "$defs": kept} if kept else result


@cache
def _output(spec: Interface) -> tuple[dict[str, Any] | None, bool]:
    """The output schema and whether it wraps the answer as ``{"result": ...}``."""
    if spec.text or not spec.response:
        return None, False
    # format=markdown etc. answers text
    answer = response_union(spec.response, *([str] if spec.formats else []))
    schema = schema_lean(TypeAdapter(answer).json_schema(mode="serialization"))
    if schema.get("type") == "object":
        schema.pop("title", None)
        return schema, False
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    return wrapped | ({"$defs": defs} if defs else {}), True


def interface_output_schema(spec: Interface) -> dict[str, Any] | None:
    """The answer's JSON Schema, from the declared response; None for text reads and undeclared ones.

    MCP's outputSchema describes an object: an answer that is one (a schema, ``dict``) is described as it is;
    any other (a list, or an object that ``format`` may render as text) is wrapped as ``{"result": ...}``, the
    SDK's own convention, and its structured content alike (``interface_structured``)."""
    return _output(spec)[0]


def interface_structured(spec: Interface, answer: Any) -> Any:
    """The structured content of a JSON-able answer (None when the tool declares no output schema)."""
    schema, wrapped = _output(spec)
    if schema is None:
        return None
    return {"result": answer} if wrapped else answer


def interface_description(spec: Interface) -> str:
    """What the tool is for, when to call it and what it returns, for a model."""
    parts = [spec.help.rstrip("。") + "。"]
    if spec.group in GROUP_USES:
        parts.append(f"用于{GROUP_USES[spec.group]}。")
    answer = "返回文本" if spec.text else "返回 JSON"
    parts.append(f"只读；{answer}，与 REST `{spec.rest}` 的答案相同。" if spec.rest else f"只读；{answer}。")
    return "".join(parts)


def interface_tool(spec: Interface) -> dict[str, Any]:
    """The MCP tool of one read: its name, description, input schema (and output schema when declared)."""
    tool = {
        "name": spec.name,
        "description": interface_description(spec),
        "inputSchema": interface_input_schema(spec),
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    }
    output = interface_output_schema(spec)
    if output is not None:
        tool["outputSchema"] = output
    return tool


def _bad(name: str, error: str) -> InvalidInput:
    return InvalidInput(f"参数无效：{name}（{error}）", extra={"errors": [{"field": name, "error": error}]})


def _value_coerce(arg: Arg, value: Any) -> Any:
    """One argument value as its declared type. Hosts often send numbers as strings (a model writes
    ``"5"``): accepted as REST's query parameters are; anything else is a 422 naming the argument."""
    kind = arg.type
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in {"true", "false", "1", "0"}:
            return value.strip().lower() in {"true", "1"}
        raise _bad(arg.name, "应为布尔值")
    if kind is int:
        if isinstance(value, bool):
            raise _bad(arg.name, "应为整数")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value.strip()) <= 19:
            return int(value.strip())
        raise _bad(arg.name, "应为整数")
    if kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _bad(arg.name, "应为数字")
    if not isinstance(value, str):
        raise _bad(arg.name, "应为字符串")
    return value


def interface_arguments(spec: Interface, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of ``spec.fn`` from a tool call's arguments: unknown names, missing
    required ones, wrong types and values outside the choices are a 422 naming the argument."""
    arguments = dict(arguments or {})
    known = {arg.name for arg in spec.all_args()}
    unknown = sorted(set(arguments) - known)
    if unknown:
        allowed = "、".join(sorted(known)) or "（无参数）"
        raise InvalidInput(
            f"未知参数：{'、'.join(unknown)}（{spec.name} 可用的参数：{allowed}）",
            extra={"errors": [{"field": n, "error": "未知参数"} for n in unknown], "allowed": sorted(known)},
        )
    params: dict[str, Any] = {}
    for arg in spec.all_args():
        value = arguments.get(arg.name)
        if value is None:
            if arg.required:
                raise _bad(arg.name, "缺少此参数")
            params[arg.name] = arg.default
            continue
        if arg.many:
            values = value if isinstance(value, list) else [value]
            value = [_value_coerce(arg, v) for v in values]
            bad = [v for v in value if arg.choices and v not in arg.choices]
        else:
            value = _value_coerce(arg, value)
            bad = [value] if arg.choices and value not in arg.choices else []
        if bad:
            raise _bad(arg.name, f"应为 {' | '.join(map(str, arg.choices))} 之一，收到 {bad[0]!r}")
        params[arg.name] = value
    return params


def interface_call(spec: Interface, *, book: Any, arguments: dict[str, Any] | None) -> Any:
    """Call the read as every door does (``Interface.call``: the selector, rendered as asked); its answer is REST's."""
    return spec.call(book=book, args=interface_arguments(spec, arguments))
