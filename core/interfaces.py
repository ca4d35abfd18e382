"""The core app's read interfaces: chapters, outlines, timelines, settings, search and reports.

Each declaration points at a selector of ``core.selectors`` / ``core.search``; the REST operation, the
``story`` subcommand and the agent tool are generated from it (kernel/interfaces.py).
"""

from core import search, selectors
from kernel.interfaces import NUMBER, Arg, Rendering, interface

VOLUME = Arg("volume", int, required=True, positional=True, help="卷号")
HEADING = Arg("heading", str, required=True, positional=True, help="## 小节标题")
CHARS = Arg(
    "chars",
    int,
    default=selectors.CHARS_DEFAULT,
    minimum=1,
    maximum=selectors.CHARS_MAX,
    help=f"字符数（1–{selectors.CHARS_MAX}，默认 500）",
)
LIMIT = Arg(
    "limit",
    int,
    default=search.SEARCH_DEFAULT_LIMIT,
    minimum=1,
    maximum=search.SEARCH_MAX_LIMIT,
    help=f"最多返回几条（1–{search.SEARCH_MAX_LIMIT}，默认 50）",
)

# ── chapters ──
interface(
    "chapter",
    help="章节的 front matter（标题、视角、定位、钩子、线索……）",
    args=(NUMBER,),
    group="章节",
    path="/chapters/{number}",
    response="core.schemas:ChapterMetaOut",
    summary="章节 front matter",
)(selectors.chapter_meta)
interface(
    "chapter-body",
    help="章节正文（不含 front matter）",
    args=(NUMBER,),
    text=True,
    group="章节",
    path="/chapters/{number}/body",
    summary="章节正文",
)(selectors.chapter_body)
interface(
    "chapter-tail",
    help="章节正文的最后 N 个字符",
    args=(NUMBER, CHARS),
    text=True,
    group="章节",
    path="/chapters/{number}/tail",
    summary="章节最后 N 字",
)(selectors.chapter_tail)
interface(
    "chapter-head",
    help="章节正文的前 N 个字符",
    args=(NUMBER, CHARS),
    text=True,
    group="章节",
    path="/chapters/{number}/head",
    summary="章节前 N 字",
)(selectors.chapter_head)
interface(
    "chapter-summary",
    help="章节摘要（front matter 的 summary）",
    args=(NUMBER,),
    text=True,
    group="章节",
    path="/chapters/{number}/summary",
    summary="章节摘要",
)(selectors.chapter_summary)
interface(
    "chapter-summaries",
    help="一段章节范围内每章的摘要（最多 500 章）",
    args=(
        Arg("start", int, required=True, positional=True, minimum=1, help="起始章"),
        Arg("end", int, required=True, positional=True, minimum=1, help="结束章（含）"),
    ),
    group="章节",
    path="/chapters/summaries",
    response="list[core.schemas:ChapterSummaryOut]",
    summary="章节范围的摘要",
)(selectors.chapter_summaries)
interface(
    "chapter-recent-tails",
    help="最近 N 章每章的最后 M 个字符（旧→新）",
    args=(
        Arg(
            "count",
            int,
            default=selectors.RECENT_DEFAULT,
            minimum=1,
            maximum=selectors.RECENT_MAX,
            help=f"章数 N（1–{selectors.RECENT_MAX}，默认 3）",
        ),
        CHARS,
        Arg("before", int, help="只取此章之前的章节（默认：最新的定稿章）"),
    ),
    group="章节",
    path="/chapters/recent-tails",
    response="list[core.schemas:ChapterTailOut]",
    summary="最近 N 章的结尾",
)(selectors.chapter_recent_tails)
interface(
    "chapter-list",
    help="按章节定位（推进/过渡/日常）列出章节，可限定卷",
    args=(
        Arg("position", str, choices=selectors.CHAPTER_POSITIONS, help="章节定位：推进 | 过渡 | 日常（省略则全部）"),
        Arg("volume", int, help="卷号"),
    ),
    group="章节",
    path="/chapters",
    response="list[core.schemas:ChapterRowOut]",
    summary="按章节定位列出章节",
)(selectors.chapter_list)

# ── outlines ──
interface(
    "outline-section",
    help="总纲的一个 ## 小节",
    args=(HEADING,),
    text=True,
    group="大纲",
    path="/outline/section",
    summary="总纲小节",
)(selectors.outline_section)
interface(
    "outline-ending",
    help="总纲的 ## 结局",
    text=True,
    group="大纲",
    path="/outline/ending",
    summary="总纲结局",
)(selectors.outline_ending)
interface(
    "volume-outline",
    help="整卷卷纲",
    args=(VOLUME,),
    text=True,
    group="大纲",
    path="/volumes/{volume}/outline",
    summary="整卷卷纲",
)(selectors.volume_outline)
interface(
    "volume-outline-section",
    help="卷纲的一个 ## 小节",
    args=(VOLUME, HEADING),
    text=True,
    group="大纲",
    path="/volumes/{volume}/outline/section",
    summary="卷纲小节",
)(selectors.volume_outline_section)
interface(
    "volume-list",
    help="列出各卷（卷号、卷名、章节范围、已定稿章数）",
    group="大纲",
    path="/volumes",
    response="list[core.schemas:VolumeOut]",
    summary="列出各卷",
)(selectors.volume_list)

# ── timelines ── (``format=text``: the Markdown table of the book's 时间线/第N卷.md, the seed's form)
TIMELINE_TABLE = {"text": Rendering(selectors.timeline_markdown, media="text/markdown")}
interface(
    "timeline-current",
    help="当前卷（最高定稿章所在卷）的时间线",
    group="时间线",
    path="/timeline/current",
    formats=TIMELINE_TABLE,
    response="core.schemas:TimelineOut",
    summary="当前卷时间线",
)(selectors.timeline_current)
interface(
    "timeline-recent",
    help="上一卷 + 当前卷的时间线",
    group="时间线",
    path="/timeline/recent",
    formats=TIMELINE_TABLE,
    response="list[core.schemas:TimelineOut]",
    summary="上一卷与当前卷时间线",
)(selectors.timeline_recent)
interface(
    "timeline-volume",
    help="指定卷的时间线",
    args=(VOLUME,),
    group="时间线",
    path="/timeline/volumes/{volume}",
    formats=TIMELINE_TABLE,
    response="core.schemas:TimelineOut",
    summary="指定卷时间线",
)(selectors.timeline_volume)
# ── settings ──
interface(
    "worldview-section",
    help="世界观的一个 ## 小节",
    args=(HEADING,),
    text=True,
    group="设定",
    path="/worldview/section",
    summary="世界观小节",
)(selectors.worldview_section)

# ── search ──
interface(
    "search",
    help="全书搜索：关键词，或按意思找情节（语义 / 混合）；章、行、上下文、找到它的信号",
    args=(
        Arg(
            "q",
            str,
            required=True,
            positional=True,
            min_length=1,
            max_length=search.QUERY_MAX_LENGTH,
            help="搜索词或一句情节描述",
        ),
        Arg(
            "mode",
            str,
            choices=search.SEARCH_MODES,
            help="keyword | semantic | hybrid（省略：有向量时 hybrid，否则 keyword）",
        ),
        LIMIT,
    ),
    group="搜索",
    path="/search",
    response="core.schemas:BookSearchOut",
    summary="全书搜索",
)(search.search_read)
interface(
    "search-regex",
    help="全书正则搜索（regex 语法，逐行；超时或非法 → 422）",
    args=(
        Arg(
            "pattern",
            str,
            required=True,
            positional=True,
            min_length=1,
            max_length=search.REGEX_MAX_LENGTH,
            help=f"正则表达式（≤{search.REGEX_MAX_LENGTH} 字符）",
        ),
        LIMIT,
    ),
    rate=("WEBNOVEL_REGEX_RATE", "正则搜索"),
    group="搜索",
    path="/search/regex",
    response="core.schemas:RegexSearchOut",
    summary="正则搜索",
)(search.search_regex)

# ── core reports ──
interface(
    "report-style-drift",
    help="文风漂移：最近 K 章的指纹与 book.yaml 基线逐项对比",
    args=(Arg("last", int, minimum=1, maximum=selectors.RANGE_MAX * 10, help="最近几章（默认与基线等长）"),),
    group="报告",
    path="/reports/style-drift",
    response="core.schemas:StyleDriftOut",
    summary="文风漂移",
)(selectors.style_drift)
interface(
    "report-weak-hooks",
    help="书末连续弱钩子的章节",
    group="报告",
    path="/reports/weak-hooks",
    response="core.schemas:WeakHooksOut",
    summary="连续弱钩子",
)(selectors.weak_hook_streak)
interface(
    "report-stats",
    help="全书统计：章数、字数、线索、角色……",
    group="报告",
    path="/reports/stats",
    response="core.schemas:BookStatsOut",
    summary="全书统计",
)(selectors.book_stats)
