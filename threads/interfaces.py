"""Read interfaces of the threads app: threads, secrets, and the reports built on them."""

from kernel.interfaces import Arg, interface
from threads import selectors

THREAD_ID = Arg("thread_id", str, required=True, positional=True, help="线索 id，如 伏笔-001")
SECRET_ID = Arg("secret_id", str, required=True, positional=True, help="信息差 id，如 信息差-001")
STATUS = Arg("status", str, choices=selectors.THREAD_STATUSES, help="状态：进行 | 已收尾 | 已放弃")

# ── threads ──
interface(
    "thread",
    help="线索基本信息：强度、状态、开启章、计划收尾，及此刻的悬挂章数",
    args=(THREAD_ID,),
    group="线索",
    path="/threads/{thread_id}",
    response="threads.schemas:ThreadBasicsOut",
    summary="线索基本信息",
)(selectors.thread_basics)
interface(
    "thread-history",
    help="线索履历（按章）",
    args=(THREAD_ID,),
    group="线索",
    path="/threads/{thread_id}/history",
    response="threads.schemas:ThreadHistoryOut",
    summary="线索履历",
)(selectors.thread_history)
interface(
    "thread-closing-plan",
    help="线索的收尾计划",
    args=(THREAD_ID,),
    text=True,
    group="线索",
    path="/threads/{thread_id}/closing-plan",
    summary="线索收尾计划",
)(selectors.thread_closing_plan)
interface(
    "thread-description",
    help="线索的描述",
    args=(THREAD_ID,),
    text=True,
    group="线索",
    path="/threads/{thread_id}/description",
    summary="线索描述",
)(selectors.thread_description)
interface(
    "thread-overdue",
    help="超期线索：id、类型、已悬挂章数（此刻计算）",
    group="线索",
    path="/threads/overdue",
    response="threads.schemas:OverdueOut",
    summary="超期线索",
)(selectors.thread_list_overdue)
interface(
    "thread-list",
    help="按类型列出线索，可按状态过滤",
    args=(
        Arg("type", str, required=True, positional=True, choices=selectors.THREAD_TYPES, help="伏笔 | 悬念 | 感情线"),
        STATUS,
    ),
    group="线索",
    path="/threads",
    response="list[threads.schemas:ThreadRowOut]",
    summary="按类型列出线索",
)(selectors.thread_list)
interface(
    "thread-by-strength",
    help="按强度列出线索，可按状态过滤",
    args=(
        Arg("strength", str, required=True, positional=True, choices=selectors.THREAD_STRENGTHS, help="高 | 中 | 低"),
        STATUS,
    ),
    group="线索",
    path="/threads/by-strength",
    response="list[threads.schemas:ThreadRowOut]",
    summary="按强度列出线索",
)(selectors.thread_list_by_strength)

# ── secrets ──
interface(
    "secret",
    help="信息差基本信息：谁知道、读者是否知道、关键词",
    args=(SECRET_ID,),
    group="信息差",
    path="/secrets/{secret_id}",
    response="threads.schemas:SecretBasicsOut",
    summary="信息差基本信息",
)(selectors.secret_basics)
interface(
    "secret-content",
    help="信息差的内容",
    args=(SECRET_ID,),
    text=True,
    group="信息差",
    path="/secrets/{secret_id}/content",
    summary="信息差内容",
)(selectors.secret_content)
interface(
    "secret-unknown",
    help="读者尚不知道的信息差及各自已积压章数",
    group="信息差",
    path="/secrets/unknown",
    response="threads.schemas:SecretUnknownOut",
    summary="读者未知的信息差",
)(selectors.secret_list_unknown)

# ── reports ──
interface(
    "report-overdue",
    help="超期线索，按类型分组",
    group="报告",
    path="/reports/overdue",
    response="threads.schemas:OverdueReportOut",
    summary="超期线索（按类型）",
)(selectors.report_overdue)
interface(
    "report-secrets",
    help="信息差积压报告",
    group="报告",
    path="/reports/secrets",
    response="threads.schemas:SecretReportOut",
    summary="信息差积压",
)(selectors.report_secret_accumulation)
interface(
    "report-thread-activity",
    help="一卷内的线索活动：开启 / 推进 / 收尾",
    args=(Arg("volume", int, required=True, positional=True, help="卷号"),),
    group="报告",
    path="/reports/thread-activity/{volume}",
    response="threads.schemas:ThreadActivityOut",
    summary="卷内线索活动",
)(selectors.report_thread_activity)
interface(
    "leak-scan",
    help="泄密扫描：关键词出现在读者得知之前，或出现在尚不知情的视角人物的章节（每个信息差每章一行）",
    args=(
        Arg("secret", str, help="只扫描这个信息差（如 信息差-001）"),
        Arg(
            "limit",
            int,
            default=selectors.LEAK_DEFAULT_LIMIT,
            minimum=1,
            maximum=selectors.LEAK_MAX_LIMIT,
            help=f"最多返回几行（1–{selectors.LEAK_MAX_LIMIT}，默认 200）",
        ),
    ),
    group="报告",
    path="/reports/leaks",
    response="threads.schemas:LeakScanOut",
    summary="泄密扫描",
)(selectors.leak_scan)
