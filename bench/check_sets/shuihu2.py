"""Blind set 2 for the continuity check: 水浒传 第91–120回 (the campaigns against 田虎, 王庆 and 方腊), a
book whose first chapter is 91. Written before the check's changes for issue 27 were measured on it,
for the final figure only (set 1, ``shuihu``, is the before / after set); not to be tuned on.

The canon is what an author would declare: cards with aliases and 绰号 (windows where an alias first
appears late: 浪子 and 小乙 for 燕青, 入云龙, 船火儿), the deaths where the text tells them (王庆 凌迟 110, 张顺
涌金门 114, 方天定 115, 邓元觉 and 燕顺 117, 石宝 自刎 118), weapons on the cards, three secrets, three threads (the
three campaigns), a style file, an office ladder. 第115回 has 张顺's ghost (张顺魂捉方天定): silent."""

SOURCE = "shuihu.txt"
FIRST = 91
CHAPTERS = 120

_DEAD = "死亡"

CARDS: dict[str, dict] = {
    "宋江": {"aliases": ["宋公明", "公明", "及时雨", "宋先锋"]},
    "卢俊义": {"aliases": ["玉麒麟", "卢先锋", "卢员外"]},
    "吴用": {"aliases": ["智多星", "吴学究", "吴军师"]},
    "李逵": {"aliases": ["黑旋风", "铁牛"], "possessions": ["板斧"]},
    "鲁智深": {"aliases": ["花和尚", "智深"], "possessions": ["禅杖"]},
    "武松": {"aliases": ["武行者", "武二郎"]},
    "燕青": {
        "aliases": [
            {"alias": "浪子", "from": 104, "note": "第104回起以绰号称"},
            {"alias": "小乙", "from": 108, "note": "卢俊义唤他小乙"},
        ]
    },
    "张顺": {"aliases": ["浪里白条"]},
    "张横": {"aliases": [{"alias": "船火儿", "from": 100}]},
    "公孙胜": {"aliases": [{"alias": "入云龙", "from": 96}, "一清"]},
    "花荣": {"aliases": ["小李广"], "官职": "团练使"},
    "关胜": {"aliases": ["大刀关胜"], "官职": "统制", "possessions": ["青龙刀"]},
    "呼延灼": {"aliases": ["双鞭"], "官职": "兵马都监"},
    "张清": {"aliases": ["没羽箭"]},
    "燕顺": {"aliases": ["锦毛虎"]},
    "王庆": {"aliases": []},
    "方腊": {"aliases": []},
    "方天定": {"aliases": []},
    "邓元觉": {"aliases": ["宝光国师"]},
    "石宝": {"aliases": [], "possessions": ["劈风刀", "流星锤"]},
    "高俅": {"aliases": ["高太尉"]},
    "杨戬": {"aliases": []},
}

MORE_CARDS: dict[str, dict] = {
    "林冲": {"aliases": ["豹子头"]},
    "秦明": {"aliases": ["霹雳火"]},
    "阮小二": {"aliases": []},
    "阮小五": {"aliases": []},
    "阮小七": {"aliases": ["活阎罗"]},
    "朱武": {"aliases": ["神机军师"]},
    "乔道清": {"aliases": ["幻魔君"]},
    "琼英": {"aliases": []},
    "田虎": {"aliases": []},
    "徐宁": {"aliases": ["金枪手"]},
    "索超": {"aliases": ["急先锋"]},
    "董平": {"aliases": ["双枪将"]},
    "史进": {"aliases": ["九纹龙"]},
    "杨志": {"aliases": ["青面兽"]},
    "戴宗": {"aliases": ["神行太保"]},
    "李俊": {"aliases": ["混江龙"]},
    "解珍": {"aliases": []},
    "解宝": {"aliases": []},
    "时迁": {"aliases": ["鼓上蚤"]},
    "宿太尉": {"aliases": []},
}

ITEMS = ["禅杖", "板斧", "青龙刀", "劈风刀", "流星锤"]

CHANGES: dict[int, list[tuple[str, str, str, str]]] = {
    110: [("王庆", "set", "status", _DEAD)],
    114: [("张顺", "set", "status", _DEAD)],
    115: [("方天定", "set", "status", _DEAD)],
    117: [("邓元觉", "set", "status", _DEAD), ("燕顺", "set", "status", _DEAD)],
    118: [("石宝", "set", "status", _DEAD)],
}

SECRETS = [
    {
        "id": "信息差-101",
        "title": "高俅杨戬以慢药水银毒害宋江",
        "known_to": ["高俅", "杨戬"],
        "reader_told": 120,
        "registered": 110,
        "keywords": ["慢药", "水银"],
    },
    {
        "id": "信息差-102",
        "title": "宋江得九天玄女三卷天书",
        "known_to": ["宋江", "吴用"],
        "reader_told": 91,
        "registered": 91,
        "keywords": ["天书"],
    },
    {
        "id": "信息差-103",
        "title": "邓元觉名号宝光如来",
        "known_to": ["邓元觉", "方腊"],
        "reader_told": 114,
        "registered": 111,
        "keywords": ["宝光如来"],
    },
]

THREADS = [
    {"id": "伏笔-101", "title": "征田虎", "opened": 91, "planned_end": 100, "closed": 100},
    {"id": "伏笔-102", "title": "征王庆", "opened": 101, "planned_end": 110, "closed": 110},
    {"id": "悬念-101", "title": "征方腊", "opened": 111, "planned_end": 119, "closed": 119},
]
WEAK_HOOKS = [95, 96, 105, 106, 113, 114]
HOOK_THRESHOLD = 3

CONTINUITY = {
    "realm_field": "官职",
    "realms": ["团练使", "统制", "兵马都监", "节度使", "宣抚使"],
    "realm_levels": [],
}
STYLE = {"banned_words": ["瞬间", "莫名", "仿佛"], "quotes": "“”"}

PLANTS: list[tuple[str, int, object]] = [
    ("inactive_acts", 112, "王庆曰：“孤家今日必报此仇。”"),
    ("inactive_acts", 113, "王庆纵马出阵，"),
    ("inactive_acts", 116, "张顺跃入水中，径奔水门。"),
    ("inactive_acts", 116, "方天定问曰：“宋兵几时到此？”"),
    ("inactive_acts", 117, "方天定挺枪出马。"),
    ("inactive_acts", 118, "邓元觉大呼：“宋江休走！”"),
    ("inactive_acts", 118, "燕顺答曰：“小弟愿往。”"),
    ("inactive_acts", 119, "石宝提刀上马，"),
    ("inactive_acts", 119, "邓元觉闻知宋兵已到，急点本部军马。"),
    ("inactive_acts", 120, "燕顺言：“哥哥且慢。”"),
    ("inactive_acts", 120, "石宝方知中计，"),
    ("inactive_acts", 120, "张顺叫道：“哥哥救我！”"),
    ("inactive_acts", 117, "张顺晓得此处水路，"),
    ("realm_lower", 102, "关胜不过是团练使，"),
    ("realm_lower", 108, "呼延灼只是个统制。"),
    ("realm_jump", 105, "花荣已是宣抚使，"),
    ("realm_jump", 113, "关胜已是宣抚使，"),
    ("realm_jump", 97, "花荣如今已是节度使。"),
    ("item_not_held", 96, "武松拿起禅杖，"),
    ("item_not_held", 101, "燕青抡起板斧便砍。"),
    ("item_not_held", 107, "李逵提着青龙刀，"),
    ("item_not_held", 111, "张清挥起劈风刀，"),
    ("alias_window", 93, "浪子在帐前听令。"),
    ("alias_window", 95, "小乙笑道：“主人放心。”"),
    ("alias_window", 92, "入云龙作起法来。"),
    ("alias_window", 94, "船火儿驾船先行。"),
    ("name_typo", 92, "卢俊仪领兵出城。"),
    ("name_typo", 104, "燕清当晚回营。"),
    ("name_typo", 111, "张舜在水中伏着。"),
    ("name_typo", 97, "吴勇与众人商议。"),
    ("name_typo", 99, "李魁大叫一声，"),
    ("name_typo", 99, "鲁知深独自下山。"),
    ("name_typo", 116, "方蜡在帮源洞中坐着。"),
    ("name_typo", 116, "邓元爵引兵出城。"),
    ("name_typo", 114, "石豹在城上看见。"),
    ("name_typo", 96, "公孙盛焚香作法。"),
    ("name_typo", 100, "张晴飞石打来。"),
    ("secret_early", 95, "高俅暗中备下慢药。"),
    ("secret_early", 103, "那酒里有水银。"),
    ("secret_early", 112, "杨戬又说起慢药的事。"),
    ("secret_early", 98, "众人都说宝光如来的名号。"),
    ("secret_early", 106, "那和尚号为宝光如来。"),
    ("pov_knowledge", 102, {"perspective": "李逵", "line": "李逵心知天书之事。"}),
    ("pov_knowledge", 109, {"perspective": "燕青", "line": "燕青知道那天书藏在何处。"}),
    ("pov_knowledge", 116, {"perspective": "宋江", "line": "宋江早知宝光如来的底细。"}),
    ("pov_knowledge", 119, {"perspective": "卢俊义", "line": "卢俊义晓得宝光如来的来历。"}),
    ("banned_word", 94, "卢俊义瞬间醒悟。"),
    ("banned_word", 108, "众将莫名惊诧。"),
    ("banned_word", 116, "宋江仿佛看见张顺立在面前。"),
    ("quote_style", 96, "吴用道：「此计甚好。」"),
    ("quote_style", 103, "宋江道：『且住。』"),
    ("quote_style", 112, '李逵道："俺去也。"'),
    ("quote_style", 118, "卢俊义道：「休要走了。」"),
    ("thread_unknown", 93, {"advances": ["伏笔-199"]}),
    ("thread_unknown", 104, {"advances": ["悬念-777"]}),
    ("thread_unknown", 117, {"closes": ["伏笔-555"]}),
    ("thread_closed", 105, {"advances": ["伏笔-101"]}),
    ("thread_closed", 114, {"advances": ["伏笔-102"]}),
    ("thread_closed", 120, {"closes": ["悬念-101"]}),
    ("thread_not_open", 92, {"advances": ["伏笔-102"]}),
    ("thread_not_open", 100, {"advances": ["悬念-101"]}),
    ("thread_not_open", 108, {"advances": ["悬念-101"]}),
    ("thread_due", 100, {"closes": None}),
    ("thread_due", 110, {"closes": None}),
    ("thread_due", 119, {"closes": None}),
    ("weak_hook_streak", 97, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 107, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 115, {"hook_type": "悬念-弱"}),
]

CONTROLS: list[tuple[int, str]] = [
    (118, "宋江梦见张顺立在面前，"),
    (117, "宋江想起张顺生前之言，放声大哭。"),
    (113, "李逵道：“王庆那厮早已伏诛。”"),
    (99, "宋江道：“圣旨上说‘不可擅杀’，如何是好？”"),
    (95, "鲁智深提着禅杖，赶将上去。"),
    (98, "吴用道：“那浪子燕青，却是卢员外心腹。”"),
    (103, "花荣当年曾是团练使，"),
    (104, "只见那妇人花容失色。"),
    (119, "众人说起方天定当年之事。"),
    (116, "那张顺的魂魄附在张横身上。"),
]
