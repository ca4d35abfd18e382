"""The core app's read interfaces: chapters, outlines, timelines, settings, search and reports.

Each declaration points at a selector of ``core.selectors`` / ``core.search``; the
``story`` command builds its arguments from here and ``core.api`` serves the same
functions at the ``rest`` path (query parameters carry the arguments that are not in the path).
"""

from core import search, selectors
from kernel.interfaces import Arg, interface

B = "/api/books/{book}"

NUMBER = Arg("number", int, required=True, positional=True, help="章节号")
VOLUME = Arg("volume", int, required=True, positional=True, help="卷号")
HEADING = Arg("heading", str, required=True, positional=True, help="## 小节标题")
CHARS = Arg("chars", int, default=selectors.CHARS_DEFAULT, help=f"字符数（1–{selectors.CHARS_MAX}，默认 500）")
LIMIT = Arg(
    "limit", int, default=search.SEARCH_DEFAULT_LIMIT, help=f"最多返回几条（1–{search.SEARCH_MAX_LIMIT}，默认 50）"
)

# ── chapters ──
interface(
    "chapter",
    help="章节的 front matter（标题、视角、定位、钩子、线索……）",
    args=(NUMBER,),
    group="章节",
    rest=f"GET {B}/chapters/{{number}}",
)(selectors.chapter_meta)
interface(
    "chapter-body",
    help="章节正文（不含 front matter）",
    args=(NUMBER,),
    text=True,
    group="章节",
    rest=f"GET {B}/chapters/{{number}}/body",
)(selectors.chapter_body)
interface(
    "chapter-tail",
    help="章节正文的最后 N 个字符",
    args=(NUMBER, CHARS),
    text=True,
    group="章节",
    rest=f"GET {B}/chapters/{{number}}/tail",
)(selectors.chapter_tail)
interface(
    "chapter-head",
    help="章节正文的前 N 个字符",
    args=(NUMBER, CHARS),
    text=True,
    group="章节",
    rest=f"GET {B}/chapters/{{number}}/head",
)(selectors.chapter_head)
interface(
    "chapter-summary",
    help="章节摘要（front matter 的 summary）",
    args=(NUMBER,),
    text=True,
    group="章节",
    rest=f"GET {B}/chapters/{{number}}/summary",
)(selectors.chapter_summary)
interface(
    "chapter-summaries",
    help="一段章节范围内每章的摘要（最多 500 章）",
    args=(
        Arg("start", int, required=True, positional=True, help="起始章"),
        Arg("end", int, required=True, positional=True, help="结束章（含）"),
    ),
    group="章节",
    rest=f"GET {B}/chapters/summaries",
)(selectors.chapter_summaries)
interface(
    "chapter-recent-tails",
    help="最近 N 章每章的最后 M 个字符（旧→新）",
    args=(
        Arg("count", int, default=selectors.RECENT_DEFAULT, help=f"章数 N（1–{selectors.RECENT_MAX}，默认 3）"),
        CHARS,
        Arg("before", int, help="只取此章之前的章节（默认：最新的定稿章）"),
    ),
    group="章节",
    rest=f"GET {B}/chapters/recent-tails",
)(selectors.chapter_recent_tails)
interface(
    "chapter-list",
    help="按章节定位（推进/过渡/日常）列出章节，可限定卷",
    args=(
        Arg("position", str, choices=selectors.CHAPTER_POSITIONS, help="章节定位：推进 | 过渡 | 日常（省略则全部）"),
        Arg("volume", int, help="卷号"),
    ),
    group="章节",
    rest=f"GET {B}/chapters",
)(selectors.chapter_list)

# ── outlines ──
interface(
    "outline-section",
    help="总纲的一个 ## 小节",
    args=(HEADING,),
    text=True,
    group="大纲",
    rest=f"GET {B}/outline/section",
)(selectors.outline_section)
interface(
    "outline-ending",
    help="总纲的 ## 结局",
    text=True,
    group="大纲",
    rest=f"GET {B}/outline/ending",
)(selectors.outline_ending)
interface(
    "volume-outline",
    help="整卷卷纲",
    args=(VOLUME,),
    text=True,
    group="大纲",
    rest=f"GET {B}/volumes/{{volume}}/outline",
)(selectors.volume_outline)
interface(
    "volume-outline-section",
    help="卷纲的一个 ## 小节",
    args=(VOLUME, HEADING),
    text=True,
    group="大纲",
    rest=f"GET {B}/volumes/{{volume}}/outline/section",
)(selectors.volume_outline_section)
interface(
    "volume-list",
    help="列出各卷（卷号、卷名、章节范围、已定稿章数）",
    group="大纲",
    rest=f"GET {B}/volumes",
)(selectors.volume_list)

# ── timelines ──
interface(
    "timeline-current",
    help="当前卷（最高定稿章所在卷）的时间线",
    group="时间线",
    rest=f"GET {B}/timeline/current",
)(selectors.timeline_current)
interface(
    "timeline-recent",
    help="上一卷 + 当前卷的时间线",
    group="时间线",
    rest=f"GET {B}/timeline/recent",
)(selectors.timeline_recent)
interface(
    "timeline-volume",
    help="指定卷的时间线",
    args=(VOLUME,),
    group="时间线",
    rest=f"GET {B}/timeline/volumes/{{volume}}",
)(selectors.timeline_volume)
# ── settings ──
interface(
    "worldview-section",
    help="世界观的一个 ## 小节",
    args=(HEADING,),
    text=True,
    group="设定",
    rest=f"GET {B}/worldview/section",
)(selectors.worldview_section)

# ── search ──
interface(
    "search",
    help="全书关键词搜索：章、行、上下文",
    args=(Arg("q", str, required=True, positional=True, help="关键词"), LIMIT),
    group="搜索",
    rest=f"GET {B}/search",
)(search.search_keyword)
interface(
    "search-regex",
    help="全书正则搜索（regex 语法，逐行；超时或非法 → 422）",
    args=(Arg("pattern", str, required=True, positional=True, help="正则表达式（≤1000 字符）"), LIMIT),
    group="搜索",
    rest=f"GET {B}/search/regex",
)(search.search_regex)

# ── core reports ──
interface(
    "report-style-drift",
    help="文风漂移：最近 K 章的指纹与 book.yaml 基线逐项对比",
    args=(Arg("last", int, help="最近几章（默认与基线等长）"),),
    group="报告",
    rest=f"GET {B}/reports/style-drift",
)(selectors.style_drift)
interface(
    "report-weak-hooks",
    help="书末连续弱钩子的章节",
    group="报告",
    rest=f"GET {B}/reports/weak-hooks",
)(selectors.weak_hook_streak)
interface(
    "report-stats",
    help="全书统计：章数、字数、线索、角色……",
    group="报告",
    rest=f"GET {B}/reports/stats",
)(selectors.book_stats)
