"""The draft check (机检) as an MCP tool: a draft with its front matter against the canon as of the
chapter before it, the answer of ``POST /api/books/{book}/continuity``.

Registered with the curated tools of ``agents.writes`` (its input is a request body, not a registry
read's parameters) but it writes nothing: it declares ``readOnlyHint``, and the server lists and runs
a tool that declares it for a read key too. Plain data here, wrapped there: this module does not
import ``agents.writes``, so the registration is no circle."""

from typing import Any

from pydantic import ValidationError

from continuity.schemas import DraftIn
from continuity.selectors import draft_check
from core.models import Book
from kernel.exceptions import InvalidInput

ARGUMENTS = ("text", "number")

DESCRIPTION = (
    "机检一篇草稿：写完第 N 章、定稿（chapter-finalize）之前调用。text 是章节文件全文（含 front matter），"
    "number 是章节号（默认取 front matter 的 chapter，否则最后一章 + 1）。对照第 N−1 章为止的设定与状态，"
    "找出已死/封印的角色在说话行动、境界倒退或跳级、用了已失去的物品、别名用在有效期外、疑似人名错字、"
    "信息差提前泄露、文风禁用词与引号、front matter 里不存在或已收尾的线索、弱钩连续超限。"
    "返回 counts（error / warning / info / waived）与 findings：每条有 kind、severity、草稿行号 line、"
    "原文 quote、证据 evidence（章节、文件、行与事实）和一句修改建议 suggestion。只读，不写入任何内容；"
    "答案与 REST POST /api/books/{book}/continuity 相同。"
)


def continuity_check_run(book: Book, arguments: dict[str, Any]) -> dict[str, Any]:
    """Validate with the REST body's schema (``number`` is its ``chapter``), then the REST endpoint's selector."""
    unknown = sorted(set(arguments) - set(ARGUMENTS))
    if unknown:
        raise InvalidInput(
            f"未知参数：{'、'.join(unknown)}（可用的参数：{'、'.join(ARGUMENTS)}）",
            extra={"errors": [{"field": n, "error": "未知参数"} for n in unknown], "allowed": list(ARGUMENTS)},
        )
    body = {"text": arguments["text"]} if "text" in arguments else {}
    if arguments.get("number") is not None:
        body["chapter"] = arguments["number"]
    try:
        payload = DraftIn.model_validate(body)
    except ValidationError as exc:
        errors = [
            {
                "field": {"chapter": "number"}.get(str(err["loc"][0]), str(err["loc"][0]))
                if err.get("loc")
                else "arguments",
                "error": err.get("msg", ""),
            }
            for err in exc.errors(include_url=False)
        ]
        raise InvalidInput(f"参数无效：{'、'.join(e['field'] for e in errors)}", extra={"errors": errors}) from exc
    return draft_check(book=book, text=payload.text, chapter=payload.chapter)


def _input_schema() -> dict[str, Any]:
    properties = DraftIn.model_json_schema(by_alias=True)["properties"]
    number = {k: v for k, v in properties["chapter"].items() if k != "title"}
    text = {k: v for k, v in properties["text"].items() if k != "title"}
    return {
        "type": "object",
        "properties": {"text": text, "number": number},
        "required": ["text"],
        "additionalProperties": False,
    }


# the keyword arguments of ``agents.writes.WriteTool``
CONTINUITY_CHECK: dict[str, Any] = {
    "name": "continuity-check",
    "description": DESCRIPTION,
    "input_schema": _input_schema(),
    "run": continuity_check_run,
    "annotations": {"readOnlyHint": True, "idempotentHint": True},
    # the same count as REST's POST /continuity (continuity.api.CONTINUITY_RATE)
    "rate": ("WEBNOVEL_CONTINUITY_RATE", "机检"),
}
