"""Read interfaces of the story system (REST, ``python manage.py story <name> <book> …``, agent tools)."""

from kernel.interfaces import NUMBER, Arg, Rendering, interface
from storysystem import selectors
from storysystem.markdown import story_markdown

MARKDOWN = {"markdown": Rendering(story_markdown, media="text/markdown")}


interface(
    "story-system-search",
    help="检索参考资料库（BM25，可按表/技能/题材过滤）",
    args=(
        Arg("q", str, required=True, positional=True, min_length=1, help="检索词"),
        Arg("table", str, help="只检索这张表，如 桥段套路"),
        Arg("skill", str, help="适用技能，如 write"),
        Arg("genre", str, help="适用题材，如 玄幻"),
        Arg("max_results", int, default=10, minimum=1, maximum=100, help="最多返回条数（1–100）"),
    ),
    group="故事系统",
    path="/story-system/search",
    response="storysystem.schemas:SearchOut",
    summary="检索参考资料库",
)(selectors.story_search)
interface(
    "story-system-route",
    help="题材路由：显式题材 > 关键词命中（附证据）> 模糊匹配 > 通用路由",
    args=(
        Arg("q", str, default="", positional=True, help="查询词，如 玄幻退婚流"),
        Arg("genre", str, help="显式题材"),
    ),
    group="故事系统",
    path="/story-system/route",
    response="storysystem.schemas:RouteOut",
    summary="题材路由",
)(selectors.story_route)
interface(
    "story-system-master",
    help="全书故事系统总设定（StorySystemDict）",
    group="故事系统",
    path="/story-system/master",
    formats=MARKDOWN,
    response="storysystem.schemas:StorySystemOut",
    summary="全书总设定",
)(selectors.master_story)
interface(
    "story-system-chapter",
    help="某章的章节设定（与当前总设定合并）",
    args=(NUMBER,),
    group="故事系统",
    path="/story-system/chapters/{number}",
    formats=MARKDOWN,
    response="storysystem.schemas:ChapterStoryOut",
    summary="章节设定",
)(selectors.chapter_story)
interface(
    "story-system-effective",
    help="某章的生效设定：每个字段的值与来源（总设定/本章）",
    args=(NUMBER,),
    group="故事系统",
    path="/story-system/chapters/{number}/effective",
    response="storysystem.schemas:EffectiveOut",
    summary="某章的生效设定",
)(selectors.chapter_effective)
