"""Read interfaces of the threads app: threads, secrets, and the reports built on them."""

from kernel.interfaces import Arg, interface
from threads import selectors

B = "/api/books/{book}"

THREAD_ID = Arg("thread_id", str, required=True, positional=True, help="线索 id，如 伏笔-001")
SECRET_ID = Arg("secret_id", str, required=True, positional=True, help="信息差 id，如 信息差-001")
STATUS = Arg("status", str, choices=selectors.THREAD_STATUSES, help="状态：进行 | 已收尾 | 已放弃")

# ── threads ──
interface(
    "thread",
    help="线索基本信息：强度、状态、开启章、计划收尾，及此刻的悬挂章数",
    args=(THREAD_ID,),
    group="线索",
    rest=f"GET {B}/threads/{{thread_id}}",
)(selectors.thread_basics)
interface(
    "thread-history",
    help="线索履历（按章）",
    args=(THREAD_ID,),
    group="线索",
    rest=f"GET {B}/threads/{{thread_id}}/history",
)(selectors.thread_history)
interface(
    "thread-closing-plan",
    help="线索的收尾计划",
    args=(THREAD_ID,),
    text=True,
    group="线索",
    rest=f"GET {B}/threads/{{thread_id}}/closing-plan",
)(selectors.thread_closing_plan)
interface(
    "thread-description",
    help="线索的描述",
    args=(THREAD_ID,),
    text=True,
    group="线索",
    rest=f"GET {B}/threads/{{thread_id}}/description",
)(selectors.thread_description)
interface(
    "thread-overdue",
    help="超期线索：id、类型、已悬挂章数（此刻计算）",
    group="线索",
    rest=f"GET {B}/threads/overdue",
)(selectors.thread_list_overdue)
interface(
    "thread-list",
    help="按类型列出线索，可按状态过滤",
    args=(
        Arg("type", str, required=True, positional=True, choices=selectors.THREAD_TYPES, help="伏笔 | 悬念 | 感情线"),
        STATUS,
    ),
    group="线索",
    rest=f"GET {B}/threads",
)(selectors.thread_list)
interface(
    "thread-by-strength",
    help="按强度列出线索，可按状态过滤",
    args=(
        Arg("strength", str, required=True, positional=True, choices=selectors.THREAD_STRENGTHS, help="高 | 中 | 低"),
        STATUS,
    ),
    group="线索",
    rest=f"GET {B}/threads/by-strength",
)(selectors.thread_list_by_strength)

# ── secrets ──
interface(
    "secret",
    help="信息差基本信息：谁知道、读者是否知道、关键词",
    args=(SECRET_ID,),
    group="信息差",
    rest=f"GET {B}/secrets/{{secret_id}}",
)(selectors.secret_basics)
interface(
    "secret-content",
    help="信息差的内容",
    args=(SECRET_ID,),
    text=True,
    group="信息差",
    rest=f"GET {B}/secrets/{{secret_id}}/content",
)(selectors.secret_content)
interface(
    "secret-unknown",
    help="读者尚不知道的信息差及各自已积压章数",
    group="信息差",
    rest=f"GET {B}/secrets/unknown",
)(selectors.secret_list_unknown)

# ── reports ──
interface(
    "report-overdue",
    help="超期线索，按类型分组",
    group="报告",
    rest=f"GET {B}/reports/overdue",
)(selectors.report_overdue)
interface(
    "report-secrets",
    help="信息差积压报告",
    group="报告",
    rest=f"GET {B}/reports/secrets",
)(selectors.report_secret_accumulation)
interface(
    "report-thread-activity",
    help="一卷内的线索活动：开启 / 推进 / 收尾",
    args=(Arg("volume", int, required=True, positional=True, help="卷号"),),
    group="报告",
    rest=f"GET {B}/reports/thread-activity/{{volume}}",
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
            help=f"最多返回几行（1–{selectors.LEAK_MAX_LIMIT}，默认 200）",
        ),
    ),
    group="报告",
    rest=f"GET {B}/reports/leaks",
)(selectors.leak_scan)
