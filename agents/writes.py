"""The write tools: the few writes of the chapter loop.

A journaled write whose declaration has a door (``kernel/journal_ops.py``: pending-confirm / -reject,
memory-fact-add, story-system-build) gets its tool generated here from that declaration, in the order
its ``WriteDoor.order`` declares (a new door touches its own app only, never this file); finalize,
sync, the extraction (its input is the extraction's own JSON Schema) and the continuity check are
declared by hand. Each validates its input with the REST endpoint's own request schema, calls the same
service the REST endpoint calls and shapes the answer with the endpoint's response schema, so both
doors answer alike. Finalize and sync have no REST twin: they answer the report of ``finalize`` /
``sync --json``."""

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.continuity_tool import CONTINUITY_CHECK
from agents.reads import arg_json_schema
from bookfiles.rebuilder import book_sync, chapter_finalize
from core.models import Book
from entities.extraction_schema import extraction_json_schema
from entities.schemas import IngestOut
from entities.services import ingest
from kernel.bounds import NUMBER_MAX
from kernel.exceptions import InvalidInput
from kernel.interfaces import NUMBER
from kernel.journal_ops import JournalOp, journal_ops_load


@dataclass(frozen=True)
class WriteTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[[Book, dict[str, Any]], Any]
    annotations: dict[str, bool] = field(default_factory=dict)
    rate: tuple[str, str] | None = None  # (settings name of the rate, what is limited), as ``Interface.rate``

    def tool(self) -> dict[str, Any]:
        """The MCP tool declaration."""
        hints = {"readOnlyHint": False, "openWorldHint": False, **self.annotations}
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": hints,
        }


def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    return schema


def _body(model: type[BaseModel], arguments: dict[str, Any]) -> Any:
    """The arguments as the REST request body, or REST's 422 naming each bad field."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        errors = [
            {"field": ".".join(str(p) for p in err.get("loc", ())) or "arguments", "error": err.get("msg", "")}
            for err in exc.errors(include_url=False)
        ]
        names = "、".join(e["field"] for e in errors)
        raise InvalidInput(f"参数无效：{names}", extra={"errors": errors}) from exc


def _answer(model: type[BaseModel], data: Any) -> Any:
    """``data`` shaped by the REST response schema, as the API serializes it."""
    return model.model_validate(data).model_dump(mode="json")


def _integer(arguments: dict[str, Any], name: str, *, low: int = 1, high: int = NUMBER_MAX) -> int:
    value = arguments.get(name)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(
            f"参数无效：{name}（应为 {low}…{high:,} 的整数，收到 {value!r}）",
            extra={"errors": [{"field": name, "error": f"应为 {low}…{high} 的整数"}]},
        )
    return value


def _report_check(report: dict[str, Any], *, action: str) -> dict[str, Any]:
    if not report["ok"]:
        raise InvalidInput(f"{action}失败：{len(report['errors'])} 个错误，数据库未改动", extra=report)
    return report


def _only(arguments: dict[str, Any], *names: str) -> None:
    unknown = sorted(set(arguments) - set(names))
    if unknown:
        raise InvalidInput(
            f"未知参数：{'、'.join(unknown)}（可用的参数：{'、'.join(names) or '（无参数）'}）",
            extra={"errors": [{"field": n, "error": "未知参数"} for n in unknown], "allowed": list(names)},
        )


# ── finalize, sync ──
def chapter_finalize_run(book: Book, arguments: dict[str, Any]) -> dict[str, Any]:
    _only(arguments, "number")
    number = _integer(arguments, "number")
    return _report_check(chapter_finalize(book=book, number=number), action=f"定稿第{number}章")


def book_sync_run(book: Book, arguments: dict[str, Any]) -> dict[str, Any]:
    _only(arguments, "replace")
    replace = arguments.get("replace", False)
    if not isinstance(replace, bool):
        raise InvalidInput(
            "参数无效：replace（应为布尔值）", extra={"errors": [{"field": "replace", "error": "应为布尔值"}]}
        )
    return _report_check(book_sync(book=book, replace=replace), action="同步")


# ── the extraction ──
def extraction_ingest_run(book: Book, arguments: dict[str, Any]) -> dict[str, Any]:
    _only(arguments, "number", "extraction")
    chapter = _integer(arguments, "number")
    raw = arguments.get("extraction")
    if raw is None:
        raise InvalidInput(
            "参数无效：extraction（缺少此参数）", extra={"errors": [{"field": "extraction", "error": "缺少此参数"}]}
        )
    # Through REST's strict decoder either way: NaN / Infinity, huge integers and lone surrogates are
    # refused here exactly as in a POST body (a host's JSON parser lets NaN through).
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    payload = ingest.extraction_parse(raw=text)
    return _answer(IngestOut, ingest.extraction_ingest(book=book, number=chapter, payload=payload))


def _ingest_schema() -> dict[str, Any]:
    extraction = extraction_json_schema()
    defs = extraction.pop("$defs", {})
    extraction.pop("$schema", None)
    return {
        "type": "object",
        "properties": {
            "number": arg_json_schema(NUMBER),
            "extraction": extraction,
        },
        "required": ["number", "extraction"],
        "additionalProperties": False,
        "$defs": defs,  # at the top: the extraction's "#/$defs/…" references resolve from the root
    }


# ── the journaled writes that declare a door (kernel/journal_ops.py), one tool each ──
def _schema_model(name: str) -> type[BaseModel]:
    module, _, attr = name.partition(":")
    return getattr(import_module(module), attr)


def _with_pk(model: type[BaseModel], description: str) -> dict[str, Any]:
    schema = _model_schema(model)
    schema["properties"] = {
        "pk": {"type": "integer", "minimum": 1, "description": description},
        **schema.get("properties", {}),
    }
    schema["required"] = ["pk", *schema.get("required", [])]
    schema["additionalProperties"] = False
    return schema


def _door_tool(declared: JournalOp) -> WriteTool:
    """The tool of a journaled write, from its declaration: the input is its REST body (plus REST's
    ``pk`` path parameter), validated by the same schema; the answer shaped by REST's response schema."""
    door = declared.door
    model, response = _schema_model(declared.schema), _schema_model(door.response)

    def run(book: Book, arguments: dict[str, Any]) -> Any:
        if door.pk:
            pk = _integer(arguments, "pk", high=2**63 - 1)
            body = _body(model, {k: v for k, v in arguments.items() if k != "pk"})
            return _answer(response, door.run(book, body, pk=pk))
        return _answer(response, door.run(book, _body(model, arguments)))

    schema = _with_pk(model, door.pk) if door.pk else _model_schema(model) | {"additionalProperties": False}
    return WriteTool(door.tool, door.description, schema, run, dict(door.annotations))


def _door_tools() -> list[WriteTool]:
    """In the order the doors declare (``WriteDoor.order``), equal orders in the registry's (the apps')."""
    declared = [op for op in journal_ops_load().values() if op.door is not None]
    return [_door_tool(op) for op in sorted(declared, key=lambda op: op.door.order)]


def _no_args() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


def write_tools() -> dict[str, WriteTool]:
    """The write tools by name (only listed for a caller that may write)."""
    tools = [
        WriteTool(
            "chapter-finalize",
            "定稿一章：作者或你写好 定稿/正文/第N卷/第0NNN章.md 之后调用，重读该章与有变化的设定文件并更新索引。"
            "返回定稿报告（changed / added / errors / hook_failures；改动了设定时 canon_changes 列出后续章节因此新增的机检问题）；"
            "有错误则数据库不变并返回错误。",
            {
                "type": "object",
                "properties": {"number": arg_json_schema(NUMBER)},
                "required": ["number"],
                "additionalProperties": False,
            },
            chapter_finalize_run,
        ),
        WriteTool(
            "book-sync",
            "同步整本书：改了多章或设定文件（线索/信息差/设定/大纲/时间线）后调用，只重读内容有变化的文件。"
            "返回同步报告（canon_changes：改动让后续章节新增的机检问题，逐条带证据）；会删除超过一半章节时拒绝，除非 replace=true。",
            {
                "type": "object",
                "properties": {
                    "replace": {"type": "boolean", "default": False, "description": "确认大规模删除（默认拒绝并列出）"}
                },
                "additionalProperties": False,
            },
            book_sync_run,
        ),
        WriteTool(
            "extraction-ingest",
            "提交一章的抽取结果：定稿一章后，按 extraction 的 JSON Schema 从刚写完的正文填写出场实体、新实体、状态变化、"
            "关系、拿不准的提及与场景，再调用。置信度 > 0.8 采纳，0.5–0.8 采纳并警告，< 0.5 进待确认队列；"
            "重复提交同一章会替换上次结果。返回 adopted / pending / warnings / created_entities。"
            "字段错误返回 JSON 路径（如 state_changes[2].op）与可用值，且不写入任何内容。",
            _ingest_schema(),
            extraction_ingest_run,
            {"idempotentHint": True},
        ),
        *_door_tools(),  # the declared doors: pending-confirm, pending-reject, memory-fact-add, story-system-build
        WriteTool(**CONTINUITY_CHECK),
    ]
    return {tool.name: tool for tool in tools}
