"""The curated write tools: the few writes of the chapter loop, hand-declared (unlike the reads).

Each validates its input with the REST endpoint's own request schema, calls the same service the REST
endpoint calls and shapes the answer with the endpoint's response schema, so both doors answer alike.
Finalize and sync have no REST twin: they answer the report of ``finalize`` / ``sync --json``."""

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.continuity_tool import CONTINUITY_CHECK
from agents.reads import arg_json_schema
from bookfiles.rebuilder import book_sync, chapter_finalize
from core.models import Book
from entities import selectors as entity_selectors
from entities.extraction_schema import extraction_json_schema
from entities.schemas import IngestOut, PendingConfirmIn, PendingRejectIn, ResolutionOut
from entities.services import ingest, pending
from kernel.bounds import NUMBER_MAX
from kernel.exceptions import InvalidInput
from kernel.interfaces import NUMBER
from memory import selectors as memory_selectors
from memory import services as memory_services
from memory.schemas import FactIn, FactOut
from storysystem import services as story_services
from storysystem.schemas import BuildIn, BuildOut


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
    return _answer(IngestOut, ingest.extraction_ingest(book=book, chapter=chapter, payload=payload))


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


# ── the pending queue ──
def pending_confirm_run(book: Book, arguments: dict[str, Any]) -> dict[str, Any]:
    pk = _integer(arguments, "pk", high=2**63 - 1)
    body = _body(PendingConfirmIn, {k: v for k, v in arguments.items() if k != "pk"})
    entity = entity_selectors.entity_get(book=book, ref=body.entity) if body.entity else None
    item = entity_selectors.pending_get(book=book, pk=pk)
    return _answer(ResolutionOut, pending.pending_item_confirm(item=item, entity=entity))


def pending_reject_run(book: Book, arguments: dict[str, Any]) -> dict[str, Any]:
    pk = _integer(arguments, "pk", high=2**63 - 1)
    body = _body(PendingRejectIn, {k: v for k, v in arguments.items() if k != "pk"})
    item = entity_selectors.pending_get(book=book, pk=pk)
    return _answer(ResolutionOut, pending.pending_item_reject(item=item, note=body.note))


def _with_pk(model: type[BaseModel]) -> dict[str, Any]:
    schema = _model_schema(model)
    schema["properties"] = {
        "pk": {"type": "integer", "minimum": 1, "description": "待确认项编号（entity-pending 的 pk）"},
        **schema.get("properties", {}),
    }
    schema["required"] = ["pk", *schema.get("required", [])]
    schema["additionalProperties"] = False
    return schema


# ── memory, Story System ──
def memory_fact_add_run(book: Book, arguments: dict[str, Any]) -> dict[str, Any]:
    body = _body(FactIn, arguments)
    fact = memory_services.fact_observe(
        book=book,
        category=body.category,
        subject=body.subject,
        field=body.field,
        value=body.value,
        chapter=body.chapter,
        confidence=body.confidence,
        evidence=body.evidence,
        entity_ref=body.entity,
    )
    return _answer(FactOut, memory_selectors.fact_to_dict(fact))


def story_system_build_run(book: Book, arguments: dict[str, Any]) -> dict[str, Any]:
    body = _body(BuildIn, arguments)
    data, files = story_services.story_setting_build(
        book=book,
        chapter=body.chapter,
        query=body.query,
        genre=body.genre,
        overrides=body.set,
        add_anti_patterns=body.add_anti_patterns,
        remove_anti_patterns=body.remove_anti_patterns,
        persist=body.persist,
    )
    return _answer(BuildOut, {"persisted": body.persist, "files": files, "story_system": data})


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
        WriteTool(
            "pending-confirm",
            "确认一个待确认项（先用 entity-pending 列出）：采纳它的写入；entity 可指定一个已有实体（id 或别名）"
            "代替建议的新实体。返回处理结果（pk、kind、entity……）。已处理过的项返回 409。",
            _with_pk(PendingConfirmIn),
            pending_confirm_run,
        ),
        WriteTool(
            "pending-reject",
            "拒绝一个待确认项：什么都不写，之后重新提交该章的抽取也不会再次排队。返回处理结果。",
            _with_pk(PendingRejectIn),
            pending_reject_run,
        ),
        WriteTool(
            "memory-fact-add",
            "记录一条记忆事实（角色状态、世界规则、未决线索、约束……）：正文里确立了以后要记住的事时调用；"
            "同一主体+字段的旧值会被自动标为过时或矛盾。返回该事实。",
            _model_schema(FactIn) | {"additionalProperties": False},
            memory_fact_add_run,
        ),
        WriteTool(
            "story-system-build",
            "生成并保存 Story System 设定：不给 chapter 是全书总设定，给 chapter 是该章的覆盖设定；"
            'set 显式指定字段（如 {"节奏策略": "慢热"}）。persist=false 只预览不保存。章节触碰锁定字段返回 422。',
            _model_schema(BuildIn) | {"additionalProperties": False},
            story_system_build_run,
        ),
        WriteTool(**CONTINUITY_CHECK),
    ]
    return {tool.name: tool for tool in tools}
