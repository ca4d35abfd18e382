"""A third held-out set for the genre router (issue 12 §10, the fallback half): craft questions that
name no genre (``CRAFT2``), which should fall back to the generic route with their reason, and short
genre requests that lean on one strong signal (``SHORT_GENRE``: the genre's name or alias, often
beside a craft word, a quantity or a point of view), which should still route.

Written and committed before the router was changed for the craft fallback (quantities, one shared
craft concept, one weak witness), without routing them first; measured once before and once after
the change (tests/storysystem/test_routing.py pins the after figures; docs/story-system.md §3 has
both).
"""

CRAFT2: list[str] = [
    "怎么写一个让人心疼的配角之死",
    "长对话里怎么交代信息才不显得生硬",
    "主角太完美了，怎么给他加点缺点",
    "一章写完总觉得很平，怎么加冲突",
    "描写一座城市的夜景，五百字",
    "把这段改成第三人称",
    "这段节奏太慢了，帮我删一删",
    "章节标题怎么起比较吸引人",
    "几个人同时说话，怎么写才不乱",
    "怎么写一个有层次的反派动机",
    "帮我把这一千字缩写成三百字",
    "倒叙开头好还是顺叙开头好",
    "写景的时候怎么融入人物的情绪",
    "结局怎么收才不烂尾",
    "一句话简介怎么写",
    "每章结尾都要留悬念吗",
]

# (request, expected route code)
SHORT_GENRE: list[tuple[str, str]] = [
    ("知乎风格的短篇怎么写", "GR-007"),
    ("第一人称的虐文", "GR-005"),
    ("番茄风的开头怎么写", "GR-006"),
    ("写一本宫斗，开头三章怎么安排", "GR-022"),
    ("丧尸围城的第一章", "GR-012"),
    ("修仙文的境界怎么设计", "GR-011"),
    ("规则怪谈的规则怎么写才吓人", "GR-002"),
    ("克苏鲁风格的环境描写", "GR-018"),
    ("快穿文每个小世界怎么衔接", "GR-025"),
    ("同人里原作角色的对话怎么写", "GR-026"),
    ("电竞比赛的场面怎么写", "GR-017"),
    ("娱乐圈文里的综艺节目怎么写", "GR-016"),
    ("种田文写到中期没劲了", "GR-015"),
    ("年代文的开头三百字", "GR-024"),
    ("甜宠文里两千字的约会戏", "GR-013"),
    ("赘婿被岳母骂的那场戏怎么写", "GR-004"),
    ("刑侦文的审讯戏怎么写", "GR-014"),
]
