"""Read interfaces of the continuity check: finalized chapters re-checked against the current canon."""

from kernel.bounds import NUMBER_MAX
from kernel.interfaces import Arg, interface

interface(
    "continuity-chapters",
    help="复查已定稿章节（改设定之后）：每章对照它前一章为止的设定与状态，列出矛盾与证据",
    args=(
        Arg("start", int, required=True, positional=True, minimum=1, maximum=NUMBER_MAX, help="起始章"),
        Arg("end", int, minimum=1, maximum=NUMBER_MAX, help="结束章（默认最后一章）"),
    ),
    group="机检",
    rate=("WEBNOVEL_CONTINUITY_RATE", "机检"),
    path="/continuity",
    response="dict",
    summary="复查已定稿章节（改设定之后）",
)("continuity.selectors.chapters_check")  # by path: the check is imported when it runs
