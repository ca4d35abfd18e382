"""Read interfaces of the memory app: context packs and their diff, facts, health, the hit log, export.

The ``context`` management command is the author-facing door to the pack (with ``--format text``);
these declarations put the same reads on ``python manage.py story <name>`` too."""

from typing import Any

from core.models import Book
from kernel.interfaces import Arg, interface
from memory import orchestrator, selectors
from memory.services import fact_get

B = "/api/books/{book}"

NUMBER = Arg("number", int, required=True, positional=True, help="章节号")
TASK = Arg("task", str, default="write", choices=orchestrator.TASKS, help="任务：write | review | query（默认 write）")
BUDGET = Arg(
    "budget", int, default=orchestrator.DEFAULT_BUDGET, help=f"token 预算（默认 {orchestrator.DEFAULT_BUDGET}）"
)


def context_pack(
    *,
    book: Book,
    number: int,
    task: str = "write",
    budget: int = orchestrator.DEFAULT_BUDGET,
    query: str | None = None,
    mode: str | None = None,
) -> dict[str, Any]:
    """The context pack of chapter ``number`` (see memory/orchestrator.py)."""
    return orchestrator.build_memory_pack(
        book=book, chapter=number, task=task, budget_tokens=budget, query=query or "", mode=mode
    )


def context_diff(
    *, book: Book, a: int, b: int, task: str = "write", budget: int = orchestrator.DEFAULT_BUDGET
) -> dict[str, Any]:
    """What differs between the packs of chapters ``a`` and ``b``."""
    return orchestrator.pack_diff(book=book, chapter_a=a, chapter_b=b, task=task, budget_tokens=budget)


def memory_fact(*, book: Book, key: str) -> dict[str, Any]:
    """One fact with its history and the values of its group."""
    return selectors.fact_history(fact=fact_get(book=book, key=key))


interface(
    "context",
    help="写作/审阅/查询某章前的上下文包（含每个候选条目的纳入或跳过原因）",
    args=(
        NUMBER,
        TASK,
        BUDGET,
        Arg("query", str, help="查询文本（task=query 时用于检索）"),
        Arg("mode", str, choices=("full", "simple"), help="full（默认）或 simple（关闭记忆，只用大纲与近章）"),
    ),
    group="记忆",
    rest=f"GET {B}/chapters/{{number}}/context",
)(context_pack)
interface(
    "context-diff",
    help="两章上下文包的差异",
    args=(
        Arg("a", int, required=True, positional=True, help="章节 A"),
        Arg("b", int, required=True, positional=True, help="章节 B"),
        TASK,
        BUDGET,
    ),
    group="记忆",
    rest=f"GET {B}/context/diff",
)(context_diff)
interface(
    "memory-facts",
    help="记忆事实列表（可按类别、状态、主体、章节筛选）",
    args=(
        Arg("category", str, choices=tuple(selectors.Fact.Category.values), help="类别"),
        Arg("status", str, choices=tuple(selectors.Fact.Status.values), help="状态"),
        Arg("subject", str, help="主体"),
        Arg("chapter", int, help="只列此章及以前确立的事实"),
        Arg("limit", int, default=200, help="最多返回几条（默认 200）"),
    ),
    group="记忆",
    rest=f"GET {B}/memory/facts",
)(selectors.fact_list)
interface(
    "memory-fact",
    help="一条记忆事实及其履历",
    args=(Arg("key", str, required=True, positional=True, help="事实 id"),),
    group="记忆",
    rest=f"GET {B}/memory/facts/{{key}}",
)(memory_fact)
interface(
    "memory-health",
    help="记忆健康报告：超期未决线索、矛盾事实、偏离的约束",
    args=(Arg("chapter", int, help="以此章为当前章（默认最新定稿章）"),),
    group="记忆",
    rest=f"GET {B}/memory/health",
)(selectors.memory_health)
interface(
    "memory-hits",
    help="记忆命中日志：各章上下文包收录了哪些事实与片段",
    args=(Arg("chapter", int, help="只看这一章"),),
    group="记忆",
    rest=f"GET {B}/memory/hits",
)(selectors.memory_hits)
