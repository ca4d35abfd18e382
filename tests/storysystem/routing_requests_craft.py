"""A second held-out set of craft questions that name no genre, for the genre router's craft signal
(issue 12 §10): how to write a fight, a dialogue, a description, a chapter's pacing, a scene type.
Written and committed before the craft signal was built (docs/story-system.md §3), without looking
at the library's technique columns; measured once afterwards. Each should fall back to the generic
route, with its reason.
"""

CRAFT_BLIND: list[str] = [
    "怎么写好打斗场面",
    "对话怎么写得自然",
    "一章的结尾怎么留钩子，让读者想点下一章",
    "伏笔埋得太明显了，怎么藏得更自然",
    "心理描写写多了显得啰嗦，怎么取舍",
    "开头三百字怎么写才能抓住读者",
    "配角总是工具人，怎么让他们活起来",
    "群像戏里人物太多，怎么让每个人都有辨识度",
    "追逐戏怎么写出紧张感",
    "怎么写一个人物的成长弧光",
    "回忆插叙放在哪里不打断节奏",
    "多条线并行的时候怎么切换视角不乱",
    "高潮章节写完感觉泄气，怎么把情绪推到顶",
    "感官描写怎么写，除了看到的还能写什么",
    "长篇写到中段总是没劲，怎么安排起伏",
    "第一人称和第三人称各有什么好处",
    "怎么用细节表现人物性格，而不是直接说他是什么样的人",
    "一段战斗写了三千字，读者说看不下去，怎么精简",
    "怎么写反转才不显得突兀",
    "人物出场的时候怎么介绍才不像报户口",
    "场景转换太生硬，有什么过渡的办法",
    "大纲怎么列，细纲要细到什么程度",
    "情绪铺垫不够，读者说主角哭得莫名其妙",
    "每章字数多少合适，章节怎么切分",
]
