"""The memory app's journaled writes, each declared once with its replayer (``kernel.journal_ops``):
a fact observed, revised, closed or decided by hand, and a scratchpad import. Registered in
``MemoryConfig.ready()`` and imported on the first replay. A replayer names a fact by its key."""

from typing import Any

from core.models import Book
from kernel.journal_ops import WriteDoor, journal_op
from memory.selectors import fact_get, fact_to_dict
from memory.services import fact_close, fact_decide, fact_observe, fact_revise, scratchpad_import


def _fact_add_door(book: Book, body: Any) -> dict[str, Any]:
    fact = fact_observe(
        book=book,
        category=body.category,
        subject=body.subject,
        field=body.field,
        value=body.value,
        number=body.chapter,
        confidence=body.confidence,
        evidence=body.evidence,
        entity_ref=body.entity,
    )
    return fact_to_dict(fact)


@journal_op(
    "memory.fact.observe",
    service=fact_observe,
    schema="memory.schemas:FactIn",
    door=WriteDoor(
        tool="memory-fact-add",
        description="记录一条记忆事实（角色状态、世界规则、未决线索、约束……）：正文里确立了以后要记住的事时调用；"
        "同一主体+字段的旧值会被自动标为过时或矛盾。返回该事实。",
        run=_fact_add_door,
        response="memory.schemas:FactOut",
        order=30,
        path="/memory/facts",
        summary="记录一条事实",
        doc="Observe a fact; the resolver updates the statuses of its subject+field at once.",
        status=201,
        body="payload",
        name="fact_observe",
    ),
)
def _fact_observe(book: Book, data: Any, e: dict) -> None:
    fact_observe(
        book=book,
        category=e["category"],
        subject=e["subject"],
        field=e["field"],
        value=e["value"],
        number=e["chapter"],
        confidence=e.get("confidence", 1.0),
        evidence=e.get("evidence") or [],
        origin=e.get("origin", "manual"),
        entity_ref=e.get("entity_ref", ""),
        revises=fact_get(book=book, key=e["revises"]) if e.get("revises") else None,
        key=e.get("key"),
        journal=False,
    )


@journal_op("memory.fact.revise", service=fact_revise, schema="memory.schemas:ReviseIn")
def _fact_revise(book: Book, data: Any, e: dict) -> None:
    fact_revise(
        fact=fact_get(book=book, key=e["fact"]),
        value=e["value"],
        number=e["chapter"],
        reason=e.get("reason", ""),
        journal=False,
    )


@journal_op("memory.fact.close", service=fact_close, schema="memory.schemas:CloseIn")
def _fact_close(book: Book, data: Any, e: dict) -> None:
    fact_close(fact=fact_get(book=book, key=e["fact"]), number=e["chapter"], reason=e.get("reason", ""), journal=False)


@journal_op("memory.fact.decide", service=fact_decide, schema="memory.schemas:DecideIn")
def _fact_decide(book: Book, data: Any, e: dict) -> None:
    fact_decide(fact=fact_get(book=book, key=e["fact"]), note=e.get("note", ""), journal=False)


@journal_op("memory.import", service=scratchpad_import, help="memory_scratchpad.json 的导入（附件）")
def _memory_import(book: Book, data: Any, e: dict) -> None:
    scratchpad_import(book=book, data=data, replace=bool(e.get("replace")), journal=False)
