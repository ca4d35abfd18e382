"""The extraction contract as JSON Schema: what the Data Agent sends for one finished chapter.

Generated from ``entities.schemas.ExtractionIn`` (the model the ingestion validates with), so the
published schema cannot drift from what is accepted; the field texts below document it for the agent
that fills it in. Served by ``GET /api/books/{book}/extraction-schema``, by the MCP ingest tool's input
schema and written to ``docs/extraction.schema.json`` (``manage.py extraction_schema``); a test checks
that every property has a text and that the file is current."""

import copy
import json
from functools import cache
from typing import Any

from entities.schemas import ExtractionIn

# model name (as in ``$defs``) → field (as in the JSON, aliases included) → what it means.
FIELD_DOCS: dict[str, dict[str, str]] = {
    "ExtractionIn": {
        "entities_appeared": "本章出场的已有实体（含别名提及）；每项一个实体，mentions 列出正文里的叫法或次数",
        "entities_new": "本章首次出现、书中尚无的实体；置信度 < 0.5 的进待确认队列",
        "state_changes": "本章发生的状态变化（境界、伤势、持有物……），按正文顺序",
        "relationships_new": "本章新建立或被揭示的关系（师徒、仇敌、同门……）",
        "uncertain": "拿不准指谁的提及（“那人”“黑衣人”）：给出候选，由人确认",
        "scenes": "本章的场景切分：序号、起止行、地点、摘要、在场角色",
        "chapter_meta": "自由格式的章节元数据（如 hook、视角），原样保存",
    },
    "AppearedIn": {
        "id": "实体 id，或本次 entities_new 的 suggested_id / name，或在本章有效的唯一别名",
        "type": "实体类型（可省略；给出时用于消除别名歧义）",
        "mentions": '正文中的叫法列表（如 ["林风", "小风"]），或提及次数；省略记 1 次',
        "confidence": "0–1：> 0.8 采纳，0.5–0.8 采纳并记警告，< 0.5 进待确认队列；省略视为确定",
    },
    "NewEntityIn": {
        "suggested_id": "建议的实体 id：小写 ASCII 字母、数字、_ 或 -，至多 100 字符（如 zhaoyuan）；省略则由正名生成",
        "name": "正名（如 赵元）",
        "type": "实体类型",
        "tier": "重要度：核心 | 重要 | 次要 | 装饰（默认 装饰）",
        "desc": "一句话描述",
        "aliases": "别名：字符串，或带有效期的对象 {alias, from, to, note, generic}",
        "state": '初始状态（自由格式对象，如 {"realm": "炼气一层"}）',
        "parent": "仅地点 / 势力：所在的上级（同类型实体的 id、正名或别名，如 白鹭洲 的 parent 为 雾海）；设定文件中的实体以名册为准",
        "confidence": "0–1，同 entities_appeared.confidence",
    },
    "AliasIn": {
        "alias": "别名",
        "from": "从第几章起有效（含）",
        "to": "到第几章为止有效（含）",
        "note": "备注（如 升任后）",
        "generic": "泛称（老爷、他、少年）：弱提及，不计出场",
    },
    "StateChangeIn": {
        "entity_id": "实体引用（同 entities_appeared.id）",
        "field": "状态字段名（如 realm、location、伤势），至多 100 字符",
        "op": "set 设为 new；unset 清除；add / remove 向列表加入 / 移除 new；inc 数值加 new",
        "old": "变化前的值（set 时用于核对：与记录不符会记警告）",
        "new": "新值（set / add / remove 必填；inc 为数字增量）",
        "reason": "原因（如 突破）",
        "confidence": "0–1，同 entities_appeared.confidence",
    },
    "RelationshipIn": {
        "from": "关系一方（实体引用）",
        "to": "关系另一方（实体引用）",
        "type": "关系类型（如 师兄、仇敌），至多 100 字符",
        "description": "说明",
        "confidence": "0–1，同 entities_appeared.confidence",
    },
    "UncertainIn": {
        "mention": "正文中拿不准的提及（如 那人）",
        "candidates": "候选实体引用",
        "confidence": "0–1：adopted 有值且 ≥ 0.5 时记为出场，否则进待确认队列",
        "adopted": "倾向的候选（实体引用），没有倾向则为 null",
    },
    "SceneIn": {
        "index": "场景序号（从 0 或 1 起）",
        "start_line": "起始行（正文行号，从 1 起）",
        "end_line": "结束行（含）",
        "location": "地点",
        "summary": "场景摘要",
        "characters": "在场角色（名字或实体引用）",
    },
}

DESCRIPTION = (
    "一章定稿后 Data Agent 提交的抽取结果（POST /api/books/{book}/chapters/{n}/extraction、"
    "manage.py ingest、MCP 工具 extraction-ingest）。所有键均可省略，未知键一律拒绝（422 指出 JSON 路径"
    "和该处可用的键）；整份在一个事务中写入，出错则什么都不写；重复提交同一章会替换上一次的结果。"
)


def _document(model_schema: dict[str, Any], docs: dict[str, str]) -> None:
    for key, prop in model_schema.get("properties", {}).items():
        if key in docs:
            prop["description"] = docs[key]


@cache
def _schema() -> str:
    schema = ExtractionIn.model_json_schema(by_alias=True)
    _document(schema, FIELD_DOCS["ExtractionIn"])
    for name, sub in schema.get("$defs", {}).items():
        _document(sub, FIELD_DOCS.get(name, {}))
    head = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    schema = {**head, **schema, "title": "抽取结果（一章）", "description": DESCRIPTION}
    return json.dumps(schema, ensure_ascii=False)


def extraction_json_schema() -> dict[str, Any]:
    """The JSON Schema of an extraction payload (a fresh copy: callers may embed or change it)."""
    return copy.deepcopy(json.loads(_schema()))


def schema_undocumented(schema: dict[str, Any]) -> list[str]:
    """``Model.field`` of every property without a description (the test keeps this empty)."""
    missing = [f"ExtractionIn.{k}" for k, p in schema.get("properties", {}).items() if not p.get("description")]
    for name, sub in schema.get("$defs", {}).items():
        missing += [f"{name}.{k}" for k, p in sub.get("properties", {}).items() if not p.get("description")]
    return missing
