"""Read interfaces of the memory app: context packs and their diff, facts, health, the hit log, export.

REST, ``python manage.py story <name> <book> …`` and the agent tools are generated from these. The
context read has no side effect: which pack a chapter used is logged by the explicit write
``POST /api/books/{book}/chapters/{number}/context/hits`` (``memory.services.context_hit_record``)."""

from kernel.interfaces import NUMBER, Arg, Rendering, interface
from memory.bounds import DEFAULT_BUDGET, FACT_LIST_MAX, MAX_BUDGET, MIN_BUDGET, TASKS
from memory.models import Fact

# Selectors by dotted path: the context pack's modules are imported by the read that runs them, not by
# every ``story`` process (kernel/interfaces.py).
TASK = Arg("task", str, default="write", choices=TASKS, help="任务：write | review | query（默认 write）")
BUDGET = Arg(
    "budget_tokens",
    int,
    default=DEFAULT_BUDGET,
    minimum=MIN_BUDGET,
    maximum=MAX_BUDGET,
    help=f"token 预算（{MIN_BUDGET}–{MAX_BUDGET}，默认 {DEFAULT_BUDGET}）",
)
QUERY = Arg("query", str, help="查询文本（task=query 时用于检索）")
MODE = Arg("mode", str, choices=("full", "simple"), help="full（默认）或 simple（关闭记忆，只用大纲与近章）")


interface(
    "context",
    help="写作/审阅/查询某章前的上下文包（含每个候选条目的纳入或跳过原因）",
    args=(NUMBER, TASK, BUDGET, QUERY, MODE),
    group="记忆",
    path="/chapters/{number}/context",
    formats={"text": Rendering("memory.orchestrator.pack_text")},
    response="memory.schemas:PackOut | str",
    summary="章节上下文包",
)("memory.orchestrator.context_pack")
interface(
    "context-diff",
    help="两章上下文包的差异",
    args=(
        Arg("a", int, required=True, positional=True, minimum=1, help="章节 A"),
        Arg("b", int, required=True, positional=True, minimum=1, help="章节 B"),
        TASK,
        BUDGET,
    ),
    group="记忆",
    path="/context/diff",
    response="dict",
    summary="两章上下文包的差异",
)("memory.orchestrator.context_diff")
interface(
    "memory-facts",
    help="记忆事实列表（可按类别、状态、主体、章节筛选）",
    args=(
        Arg("category", str, choices=tuple(Fact.Category.values), help="类别"),
        Arg("status", str, choices=tuple(Fact.Status.values), help="状态"),
        Arg("subject", str, help="主体"),
        Arg("chapter", int, help="只列此章及以前确立的事实"),
        Arg(
            "limit",
            int,
            default=200,
            minimum=1,
            maximum=FACT_LIST_MAX,
            help=f"最多返回几条（1–{FACT_LIST_MAX}，默认 200）",
        ),
    ),
    group="记忆",
    path="/memory/facts",
    response="list[memory.schemas:FactOut]",
    summary="记忆事实列表",
)("memory.selectors.fact_list")
interface(
    "memory-fact",
    help="一条记忆事实及其履历",
    args=(Arg("key", str, required=True, positional=True, help="事实 id"),),
    group="记忆",
    path="/memory/facts/{key}",
    response="dict",
    summary="事实及其履历",
)("memory.selectors.memory_fact")
interface(
    "memory-health",
    help="记忆健康报告：超期未决线索、矛盾事实、偏离的约束",
    args=(Arg("chapter", int, help="以此章为当前章（默认最新定稿章）"),),
    group="记忆",
    path="/memory/health",
    response="dict",
    summary="记忆健康报告",
)("memory.selectors.memory_health")
interface(
    "memory-hits",
    help="记忆命中日志：各章上下文包收录了哪些事实与片段",
    args=(Arg("chapter", int, help="只看这一章"),),
    group="记忆",
    path="/memory/hits",
    response="list[dict]",
    summary="记忆命中日志",
)("memory.selectors.memory_hits")
interface(
    "memory-export",
    help="导出长期记忆（旧插件 memory_scratchpad.json 的格式，每个类别一桶）",
    group="记忆",
    path="/memory/export",
    response="dict",
    summary="导出 memory_scratchpad.json",
)("memory.selectors.scratchpad_export")
