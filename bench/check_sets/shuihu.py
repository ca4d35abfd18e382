"""Blind set 1 for the continuity check: 水浒传 第1–48回 (``$WEBNOVEL_SHARED/corpus/shuihu.txt``), read at
run time, never copied into the repository. Written before any change to the check it measures
(issue 27), and not to be tuned on afterwards.

The canon is what an author of this book would declare: character cards with aliases and 绰号 (some
with a window: 智深 only after the ordination, 武行者 only after 第30回), the deaths where the text tells
them and the items that change hands (as ``<entity-update>`` tags at the end of that chapter, the only
way the engine read a state change when this set was written), three secrets, three threads that close
where the text closes them, a style file (banned words that the book never uses, “” quotes: 第1–48回 use
“” with ‘’ nested inside) and an office ladder for the realm kinds (官职: 都头 < 提辖 < 制使 < 团练使 <
都监 < 统制 < 总管 < 节度使 — the realm check on a historical novel).

``PLANTS``: one line (or one front-matter edit) per planted contradiction, in the book's register (道,
曰, 问曰, 大呼, 言; 提, 挺, 拍马, 纵马; 闻知, 方知). ``CONTROLS``: lines that must give no error and no warning
(memories, ghosts, quoted speech, the standard ‘’ nesting, an item its holder uses)."""

SOURCE = "shuihu.txt"
FIRST = 1
CHAPTERS = 48

_DEAD = "死亡"

# name → card fields (aliases: plain strings or {alias, from, to, note})
CARDS: dict[str, dict] = {
    "宋江": {"aliases": ["宋公明", "公明", "及时雨", "呼保义", "宋押司", "孝义黑三郎", "黑三郎"]},
    "林冲": {"aliases": ["豹子头", "林教头"]},
    "鲁智深": {
        "aliases": ["鲁达", "花和尚", "鲁提辖", {"alias": "智深", "from": 3, "note": "五台山剃度后的法名"}],
        "官职": "提辖",
        "possessions": [],
    },
    "武松": {
        "aliases": [
            "武二郎",
            "武二",
            {"alias": "武都头", "from": 22, "note": "景阳冈打虎后做了阳谷县都头"},
            {"alias": "武行者", "from": 30, "note": "十字坡扮作行者之后"},
        ],
        "possessions": ["哨棒"],
    },
    "李逵": {"aliases": ["黑旋风", "铁牛", "李铁牛"]},
    "吴用": {"aliases": ["智多星", "吴学究", "加亮先生"]},
    "晁盖": {"aliases": ["托塔天王", "晁天王", "晁保正"]},
    "杨志": {"aliases": ["青面兽", "杨制使"], "官职": "制使", "possessions": ["宝刀"]},
    "史进": {"aliases": ["九纹龙", "史大郎"]},
    "花荣": {"aliases": ["小李广", "花知寨"]},
    "戴宗": {"aliases": ["神行太保", "戴院长"]},
    "秦明": {"aliases": ["霹雳火", "秦统制"], "官职": "统制"},
    "柴进": {"aliases": ["小旋风", "柴大官人"]},
    "高俅": {"aliases": ["高太尉", "高二"]},
    "张顺": {"aliases": ["浪里白条"]},
    "郑屠": {"aliases": ["镇关西"]},
    "王伦": {"aliases": ["白衣秀士"]},
    "阎婆惜": {"aliases": ["婆惜"]},
    "武大郎": {"aliases": ["武大"]},
    "潘金莲": {"aliases": ["金莲"]},
    "西门庆": {"aliases": ["西门大官人"]},
    "蒋门神": {"aliases": ["蒋忠"]},
    "张都监": {"aliases": []},
    "黄文炳": {"aliases": []},
    "陆谦": {"aliases": ["陆虞候"]},
    "牛二": {"aliases": []},
    "裴如海": {"aliases": []},
    "潘巧云": {"aliases": ["巧云"]},
}

# more of the real cast (the "declaring more must not raise warnings" variant): names and 绰号 only
MORE_CARDS: dict[str, dict] = {
    "公孙胜": {"aliases": ["入云龙"]},
    "刘唐": {"aliases": ["赤发鬼"]},
    "阮小二": {"aliases": ["立地太岁"]},
    "阮小五": {"aliases": ["短命二郎"]},
    "阮小七": {"aliases": ["活阎罗"]},
    "朱仝": {"aliases": ["美髯公"]},
    "雷横": {"aliases": ["插翅虎"]},
    "白胜": {"aliases": ["白日鼠"]},
    "张青": {"aliases": ["菜园子"]},
    "孙二娘": {"aliases": ["母夜叉"]},
    "施恩": {"aliases": ["金眼彪"]},
    "燕顺": {"aliases": ["锦毛虎"]},
    "王英": {"aliases": ["矮脚虎", "王矮虎"]},
    "李俊": {"aliases": ["混江龙"]},
    "张横": {"aliases": ["船火儿"]},
    "穆弘": {"aliases": ["没遮拦"]},
    "薛永": {"aliases": ["病大虫"]},
    "朱贵": {"aliases": ["旱地忽律"]},
    "杜迁": {"aliases": ["摸着天"]},
    "宋万": {"aliases": ["云里金刚"]},
    "王进": {"aliases": ["王教头"]},
    "石秀": {"aliases": ["拚命三郎"]},
    "杨雄": {"aliases": ["病关索"]},
    "时迁": {"aliases": ["鼓上蚤"]},
    "王婆": {"aliases": []},
    "郓哥": {"aliases": []},
    "何九叔": {"aliases": []},
    "李忠": {"aliases": ["打虎将"]},
    "周通": {"aliases": ["小霸王"]},
    "洪教头": {"aliases": []},
}

ITEMS = ["哨棒", "宝刀", "禅杖", "戒刀", "板斧"]

# chapter → state changes told in it: (name, op, field, value)
CHANGES: dict[int, list[tuple[str, str, str, str]]] = {
    2: [("郑屠", "set", "status", _DEAD)],
    3: [("鲁智深", "add", "possessions", "禅杖")],
    9: [("陆谦", "set", "status", _DEAD)],
    11: [("牛二", "set", "status", _DEAD), ("杨志", "remove", "possessions", "宝刀")],
    18: [("王伦", "set", "status", _DEAD)],
    20: [("阎婆惜", "set", "status", _DEAD)],
    22: [("武松", "remove", "possessions", "哨棒"), ("武松", "set", "官职", "都头")],
    24: [("武大郎", "set", "status", _DEAD)],
    25: [("潘金莲", "set", "status", _DEAD), ("西门庆", "set", "status", _DEAD)],
    30: [
        ("蒋门神", "set", "status", _DEAD),
        ("张都监", "set", "status", _DEAD),
        ("武松", "add", "possessions", "戒刀"),
    ],
    37: [("李逵", "add", "possessions", "板斧")],
    40: [("黄文炳", "set", "status", _DEAD)],
    44: [("裴如海", "set", "status", _DEAD)],
    45: [("潘巧云", "set", "status", _DEAD)],
}

SECRETS = [
    {
        "id": "信息差-001",
        "title": "晁盖等七人劫取生辰纲",
        "known_to": ["晁盖", "吴用", "公孙胜", "刘唐"],
        "reader_told": 14,
        "registered": 13,
        "keywords": ["生辰纲"],
    },
    {
        "id": "信息差-002",
        "title": "晁盖的书信藏在宋江的招文袋里",
        "known_to": ["宋江", {"name": "阎婆惜", "since": 20}],
        "reader_told": 17,
        "registered": 17,
        "keywords": ["招文袋"],
    },
    {
        "id": "信息差-003",
        "title": "潘金莲以砒霜毒杀武大郎",
        "known_to": ["潘金莲", "西门庆", {"name": "武松", "since": 25}],
        "reader_told": 24,
        "registered": 23,
        "keywords": ["砒霜"],
    },
]

THREADS = [
    {"id": "伏笔-001", "title": "生辰纲", "opened": 13, "planned_end": 15, "closed": 15},
    {"id": "伏笔-002", "title": "武松为兄报仇", "opened": 23, "planned_end": 25, "closed": 25},
    {"id": "悬念-001", "title": "宋江上梁山", "opened": 17, "planned_end": 41, "closed": 41},
]
WEAK_HOOKS = [8, 9, 33, 34, 44, 45]  # finalized chapters whose hook_type is weak (a streak of two: silent)
HOOK_THRESHOLD = 3

CONTINUITY = {
    "realm_field": "官职",
    "realms": ["都头", "提辖", "制使", "团练使", "都监", "统制", "总管", "节度使"],
    "realm_levels": [],
}
STYLE = {"banned_words": ["瞬间", "莫名", "顿时"], "quotes": "“”"}

# (kind, chapter, line) — a body line inserted into the chapter
LINE = "line"
# (kind, chapter, {front-matter edit}) — an edit of the draft's front matter
FRONT = "front"

PLANTS: list[tuple[str, int, object]] = [
    # a dead character acts, speaks, perceives or knows
    ("inactive_acts", 4, "郑屠提着一把剔骨尖刀，从桥下赶将来。"),
    ("inactive_acts", 6, "镇关西大喝道：“那里来的秃驴！”"),
    ("inactive_acts", 19, "王伦起身道：“众位好汉且住，听小可一言。”"),
    ("inactive_acts", 21, "王伦问曰：“来者何人？”"),
    ("inactive_acts", 22, "阎婆惜笑道：“押司今夜来得早。”"),
    ("inactive_acts", 26, "武大挑着炊饼担儿，从紫石街上走过来。"),
    ("inactive_acts", 27, "潘金莲答曰：“叔叔万福。”"),
    ("inactive_acts", 28, "西门庆拍马赶来，大叫：“武二休走！”"),
    ("inactive_acts", 33, "蒋门神挺着朴刀，抢入店来。"),
    ("inactive_acts", 35, "张都监大呼：“拿下这厮！”"),
    ("inactive_acts", 42, "黄文炳纵马上前，喝令军士休要走了宋江。"),
    ("inactive_acts", 44, "武大郎言：“兄弟，你几时回来？”"),
    ("inactive_acts", 31, "潘金莲闻知武松回来，慌忙躲入楼上去了。"),
    ("inactive_acts", 46, "潘巧云方知石秀之计，低头不语。"),
    # the office ladder
    ("realm_lower", 12, "杨志此时不过是个都头，"),
    ("realm_lower", 36, "秦明如今只是提辖，众人都不信。"),
    ("realm_lower", 5, "鲁智深只是一个都头。"),
    ("realm_jump", 24, "武松如今已是总管，"),
    ("realm_jump", 13, "杨志已是节度使，"),
    ("realm_jump", 38, "秦明已是节度使，"),
    ("realm_jump", 8, "鲁智深已是都监。"),
    # an item no longer held (error) or held by another (warning)
    ("item_not_held", 26, "武松提着哨棒，大踏步奔狮子桥下来。"),
    ("item_not_held", 29, "武松拿着哨棒赶将去。"),
    ("item_not_held", 13, "杨志拔出宝刀，直取索超。"),
    ("item_not_held", 17, "杨志挥起宝刀，砍翻了两个军汉。"),
    ("item_not_held", 39, "李逵抡起禅杖便打。"),
    ("item_not_held", 31, "宋江拿起戒刀，割断了绳索。"),
    # an alias outside its window
    ("alias_window", 2, "智深大踏步走入店来。"),
    ("alias_window", 27, "武行者吃了一惊，放下酒碗。"),
    ("alias_window", 15, "武都头正在店中吃酒。"),
    ("alias_window", 28, "武行者大笑起来。"),
    # a name misspelt (homophones and one-off)
    ("name_typo", 18, "宋疆听了，便起身出门。"),
    ("name_typo", 12, "林翀在山寨中闷闷不已。"),
    ("name_typo", 24, "武嵩回到县里，径投紫石街来。"),
    ("name_typo", 40, "李葵手搦双斧，杀将入去。"),
    ("name_typo", 16, "吴咏当晚与众人商议。"),
    ("name_typo", 19, "晁丐请众头领坐了。"),
    ("name_typo", 33, "花蓉在寨中坐立不安。"),
    ("name_typo", 38, "戴棕作起神行法来。"),
    ("name_typo", 4, "鲁智森吃得醉了，下山来。"),
    ("name_typo", 23, "潘金连在帘子下站着。"),
    ("name_typo", 23, "西门青打从帘子下走过。"),
    ("name_typo", 19, "阎婆西在楼上冷笑。"),
    # a secret's keyword before the reader is told
    ("secret_early", 8, "众人都在议论那生辰纲的事。"),
    ("secret_early", 12, "梁中书早已备下生辰纲。"),
    ("secret_early", 10, "酒保低声说起招文袋里的书信。"),
    ("secret_early", 16, "那婆子袖中藏着一包砒霜。"),
    ("secret_early", 20, "阎婆心里想着砒霜的事。"),
    # the point-of-view character knows what they do not know
    ("pov_knowledge", 27, {"perspective": "宋江", "line": "宋江心知砒霜之事，却不说破。"}),
    ("pov_knowledge", 30, {"perspective": "林冲", "line": "林冲早知招文袋里藏着书信。"}),
    ("pov_knowledge", 35, {"perspective": "花荣", "line": "花荣知道那砒霜的来历。"}),
    ("pov_knowledge", 44, {"perspective": "李逵", "line": "李逵晓得招文袋里的勾当。"}),
    # style
    ("banned_word", 9, "林冲瞬间惊醒，提了花枪出来。"),
    ("banned_word", 21, "宋江顿时慌了手脚。"),
    ("banned_word", 41, "众人莫名其妙，面面相觑。"),
    ("quote_style", 7, "林冲道：「兄长何故如此？」"),
    ("quote_style", 23, "武松道：「嫂嫂休要恁地。」"),
    ("quote_style", 34, "花荣道：『哥哥放心。』"),
    ("quote_style", 47, '宋江道："且回寨中商议。"'),
    # front matter
    ("thread_unknown", 5, {"advances": ["伏笔-009"]}),
    ("thread_unknown", 21, {"advances": ["悬念-007"]}),
    ("thread_unknown", 39, {"closes": ["伏笔-404"]}),
    ("thread_closed", 18, {"advances": ["伏笔-001"]}),
    ("thread_closed", 30, {"advances": ["伏笔-002"]}),
    ("thread_closed", 45, {"closes": ["伏笔-002"]}),
    ("thread_not_open", 8, {"advances": ["悬念-001"]}),
    ("thread_not_open", 12, {"advances": ["伏笔-002"]}),
    ("thread_not_open", 6, {"advances": ["伏笔-001"]}),
    ("thread_due", 15, {"closes": None}),
    ("thread_due", 25, {"closes": None}),
    ("thread_due", 41, {"closes": None}),
    ("weak_hook_streak", 10, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 35, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 46, {"hook_type": "悬念-弱"}),
]

CONTROLS: list[tuple[int, str]] = [
    (27, "武松想起武大生前之言，不觉泪下。"),
    (26, "武大的阴魂叫道：“兄弟，你与我做主！”"),
    (35, "众人说起王伦当年心胸窄狭之事。"),
    (30, "宋江道：“武大已死，休再提他。”"),
    (46, "李逵叫道：“黄文炳那厮死得好！”"),
    (10, "林冲道：“那人说‘明日再来’，便去了。”"),
    (12, "杨志原是殿司制使，"),
    (8, "鲁智深提着禅杖，大踏步赶来。"),
    (33, "宋江心知招文袋里的书信干系重大。"),
    (28, "施恩道：“人称武行者的便是他。”"),
]
