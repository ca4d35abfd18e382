"""Blind set 6 for the continuity check: 《云阳烽火录》, an original 18-chapter historical war novel in a
half-classical register (曰 / 问曰 / 答曰 / 叱曰 speech, 提刀上马 / 挺枪跃马 / 拍马 actions, 闻 / 方知 knowing,
courtesy names used as names), written for session 11 of issue 27 (``yunyang.txt`` beside this module; sets
1–3 use up 水浒传 but 第49回, set 4 is the 仙侠 《青崖剑录》, set 5 the modern 《零点回声》). Committed
before any change to the check of that session, measured once on the engine as it was, and not to be tuned
on afterwards. The clean version is the text itself: plants and controls are inserted at run time.

The canon is what its author would declare: cards with aliases and courtesy names (子烈, 伯岳, 公远, 子明,
伯恭, 仲和; 白袍将 only from 第12章, when 韩彰 kills 慕容烈 and the enemy names him), an office ladder
(都伯 < 校尉 < 牙门将 < 中郎将 < 都督) with the promotions at their chapters (韩彰 牙门将 7, 中郎将 13; 陆昂
校尉 13), the deaths where the text tells them (周岱 6, 慕容烈 12, 裴元 14, 沈穆 16, 宇文通 18), items changing
hands (白玉玦 5 and back 18, 龙渊剑 6, 舆图 8, 虎符 9 and 15, 踏雪驹 12), three secrets (裴元 the 细作, 韩彰
the 韩太尉's 遗孤, the 藏兵 map in the 白玉玦), three threads and a style file (banned 瞬间 / 不由得 / 心中一凛).

Traps a check fitted to other books may fall into: two real people who share a sound (张翼 the general, 张毅
the gate clerk, declared only with more cast), courtesy names that sit inside ordinary words (孔子明言, 性子烈,
主公远道), the dead quoted, mourned, dreamt of and given a posthumous title (谥曰), a quoted children's rhyme
naming 白袍将 before its window, a flash-forward (后来韩彰官至都督), 细作 said before the secret is told.

``PLANTS``: one line (or front-matter edit) per planted contradiction, 70 over the 15 kinds.
``CONTROLS``: lines that must give no error and no warning."""

from pathlib import Path

SOURCE = str(Path(__file__).resolve().with_name("yunyang.txt"))
FIRST = 1
CHAPTERS = 18

_DEAD = "死亡"

CARDS: dict[str, dict] = {
    "韩彰": {
        "aliases": ["子烈", {"alias": "白袍将", "from": 12, "note": "阵斩慕容烈后北燕兵所称"}],
        "官阶": "校尉",
    },
    "周岱": {"aliases": ["伯岳", "周老将军"], "possessions": ["龙渊剑"]},
    "沈穆": {"aliases": ["公远", "沈公"], "possessions": ["虎符"]},
    "孟昭": {"aliases": ["子明"]},
    "张翼": {"aliases": ["伯恭"], "官阶": "中郎将"},
    "苏婉": {"aliases": ["婉儿"], "possessions": ["白玉玦"]},
    "陆昂": {"aliases": [], "官阶": "都伯"},
    "裴元": {"aliases": ["仲和", "裴参军"]},
    "杜衡": {"aliases": [], "possessions": ["舆图"]},
    "慕容烈": {"aliases": ["慕容将军"], "possessions": ["踏雪驹"]},
    "宇文通": {"aliases": ["北燕王"]},
}

MORE_CARDS: dict[str, dict] = {
    "张毅": {"aliases": []},
    "刘五": {"aliases": []},
}

ITEMS = ["龙渊剑", "虎符", "白玉玦", "舆图", "踏雪驹"]

CHANGES: dict[int, list[tuple[str, str, str, str]]] = {
    5: [("苏婉", "remove", "possessions", "白玉玦"), ("韩彰", "add", "possessions", "白玉玦")],
    6: [
        ("周岱", "remove", "possessions", "龙渊剑"),
        ("韩彰", "add", "possessions", "龙渊剑"),
        ("周岱", "set", "status", _DEAD),
    ],
    7: [("韩彰", "set", "官阶", "牙门将")],
    8: [("杜衡", "remove", "possessions", "舆图"), ("孟昭", "add", "possessions", "舆图")],
    9: [("沈穆", "remove", "possessions", "虎符"), ("韩彰", "add", "possessions", "虎符")],
    12: [
        ("慕容烈", "remove", "possessions", "踏雪驹"),
        ("韩彰", "add", "possessions", "踏雪驹"),
        ("慕容烈", "set", "status", _DEAD),
    ],
    13: [("韩彰", "set", "官阶", "中郎将"), ("陆昂", "set", "官阶", "校尉")],
    14: [("裴元", "set", "status", _DEAD)],
    15: [("韩彰", "remove", "possessions", "虎符"), ("张翼", "add", "possessions", "虎符")],
    16: [("沈穆", "set", "status", _DEAD)],
    18: [
        ("宇文通", "set", "status", _DEAD),
        ("韩彰", "remove", "possessions", "白玉玦"),
        ("苏婉", "add", "possessions", "白玉玦"),
    ],
}

SECRETS = [
    {
        "id": "信息差-601",
        "title": "裴元是宇文通安插在云阳的细作",
        "known_to": ["裴元", "宇文通", "孟昭", "张翼", "韩彰", "杜衡"],
        "reader_told": 13,
        "registered": 4,
        "keywords": ["细作"],
    },
    {
        "id": "信息差-602",
        "title": "韩彰是前朝韩太尉的遗孤",
        "known_to": ["周岱", "孟昭", "韩彰", "沈穆"],
        "reader_told": 11,
        "registered": 2,
        "keywords": ["遗孤"],
    },
    {
        "id": "信息差-603",
        "title": "白玉玦内环刻着韩太尉的藏兵之所",
        "known_to": ["沈穆", "韩彰", "苏婉"],
        "reader_told": 15,
        "registered": 5,
        "keywords": ["藏兵"],
    },
]

THREADS = [
    {"id": "悬念-601", "title": "军中细作是谁", "opened": 4, "planned_end": 14, "closed": 14},
    {"id": "伏笔-601", "title": "周岱之仇", "opened": 6, "planned_end": 12, "closed": 12},
    {"id": "伏笔-602", "title": "玉玦之秘", "opened": 5, "planned_end": 18, "closed": 18},
]
WEAK_HOOKS = [3, 4, 9, 10, 15, 16]
HOOK_THRESHOLD = 3

CONTINUITY = {"realm_field": "官阶", "realms": ["都伯", "校尉", "牙门将", "中郎将", "都督"], "realm_levels": []}
STYLE = {"banned_words": ["瞬间", "不由得", "心中一凛"], "quotes": "“”"}

PLANTS: list[tuple[str, int, object]] = [
    ("inactive_acts", 8, "周岱曰：“子烈，随我巡城。”"),
    ("inactive_acts", 9, "伯岳问曰：“城中粮草还有几何？”"),
    ("inactive_acts", 10, "周老将军提刀上马，"),
    ("inactive_acts", 11, "周岱答曰：“此计可行。”"),
    ("inactive_acts", 13, "周岱抚须笑曰：“善。”"),
    ("inactive_acts", 13, "慕容烈挺矛跃马，直取韩彰。"),
    ("inactive_acts", 14, "慕容烈拍马舞矛，冲入阵中。"),
    ("inactive_acts", 15, "慕容将军引兵杀到，"),
    ("inactive_acts", 15, "裴元叱曰：“尔等安敢如此！”"),
    ("inactive_acts", 16, "裴参军闻之大惊，"),
    ("inactive_acts", 17, "沈穆方知其中缘故，"),
    ("inactive_acts", 17, "沈公大呼：“左右何在！”"),
    ("inactive_acts", 18, "沈穆言于众曰：“此城不可弃。”"),
    ("inactive_acts", 18, "裴元纵马出城，"),
    ("realm_lower", 9, "韩彰不过一校尉，"),
    ("realm_lower", 11, "子烈如今也就是个校尉。"),
    ("realm_lower", 14, "韩彰仍是个牙门将，"),
    ("realm_lower", 16, "陆昂不过一都伯，"),
    ("realm_jump", 4, "韩彰已是中郎将，"),
    ("realm_jump", 8, "陆昂已升中郎将，"),
    ("realm_jump", 14, "韩彰已拜都督，"),
    ("item_not_held", 4, "韩彰拔出龙渊剑，"),
    ("item_not_held", 7, "陆昂把龙渊剑挂在腰间，"),
    ("item_not_held", 10, "张翼手执虎符，"),
    ("item_not_held", 11, "苏婉摩挲着白玉玦，"),
    ("item_not_held", 14, "孟昭跨上踏雪驹，"),
    ("item_not_held", 16, "韩彰举起虎符，"),
    ("item_not_held", 17, "杜衡展开舆图，"),
    ("alias_window", 5, "白袍将引兵出城。"),
    ("alias_window", 8, "白袍将立于城头，"),
    ("alias_window", 10, "白袍将按剑而立。"),
    ("name_typo", 3, "韩璋在营中点兵。"),
    ("name_typo", 4, "沈睦召众将议事。"),
    ("name_typo", 5, "孟招独自登上城楼。"),
    ("name_typo", 7, "张冀引兵巡视西营。"),
    ("name_typo", 9, "裴源送来一车粮草，"),
    ("name_typo", 11, "杜恒从江北回来，"),
    ("name_typo", 13, "苏宛亲手为众将斟酒。"),
    ("name_typo", 15, "陆昴在帐外候命。"),
    ("name_typo", 17, "宇文同闻报大惊，"),
    ("secret_early", 6, "裴元原是宇文通的细作。"),
    ("secret_early", 8, "韩彰乃前朝韩太尉的遗孤。"),
    ("secret_early", 10, "玉玦之中刻着藏兵之所。"),
    ("secret_early", 12, "裴元这细作藏得好深。"),
    ("pov_knowledge", 12, {"perspective": "苏婉", "line": "苏婉方知韩彰乃韩太尉遗孤。"}),
    ("pov_knowledge", 14, {"perspective": "陆昂", "line": "陆昂心知裴元便是细作。"}),
    ("pov_knowledge", 16, {"perspective": "张翼", "line": "张翼早晓得玉玦之中藏兵之所。"}),
    ("pov_knowledge", 17, {"perspective": "杜衡", "line": "杜衡亦知韩彰是韩太尉遗孤。"}),
    ("banned_word", 5, "韩彰瞬间明白过来。"),
    ("banned_word", 12, "苏婉不由得落下泪来。"),
    ("banned_word", 16, "孟昭心中一凛，"),
    ("quote_style", 2, "刘五叫道：「将军快走！」"),
    ("quote_style", 7, '张翼曰："末将愿往。"'),
    ("quote_style", 11, "孟昭笑曰：『此天助我也。』"),
    ("quote_style", 15, "苏婉曰：‘妾在此。’"),
    ("thread_unknown", 6, {"advances": ["伏笔-699"]}),
    ("thread_unknown", 10, {"advances": ["悬念-688"]}),
    ("thread_unknown", 16, {"closes": ["伏笔-677"]}),
    ("thread_closed", 13, {"advances": ["伏笔-601"]}),
    ("thread_closed", 16, {"advances": ["悬念-601"]}),
    ("thread_closed", 17, {"advances": ["伏笔-601"]}),
    ("thread_not_open", 2, {"advances": ["悬念-601"]}),
    ("thread_not_open", 3, {"advances": ["伏笔-602"]}),
    ("thread_not_open", 4, {"advances": ["伏笔-601"]}),
    ("thread_due", 12, {"closes": None}),
    ("thread_due", 14, {"closes": None}),
    ("thread_due", 18, {"closes": None}),
    ("weak_hook_streak", 5, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 11, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 17, {"hook_type": "悬念-弱"}),
]

CONTROLS: list[tuple[int, str]] = [
    (8, "韩彰想起周岱生前之言，泪如雨下。"),
    (9, "韩彰梦见周岱立于帐前，"),
    (10, "孟昭曰：“周老将军在时，常言此城可守。”"),
    (11, "城中小儿唱曰：“白袍将，骑白马，一枪挑落慕容家。”"),
    (12, "周岱的龙渊剑如今挂在韩彰腰间。"),
    (13, "帐中供着周岱的灵位。"),
    (14, "张翼曰：“周公尝言‘兵贵神速’，吾不敢忘。”"),
    (15, "韩彰骑着踏雪驹，"),
    (16, "陆昂当年不过一都伯，"),
    (17, "后人有诗叹裴元曰：“一念差池身首异，千金难买悔当初。”"),
    (17, "众人说起沈公当年之事。"),
    (17, "北燕使者入城，称其主公远道而来，只求一见。"),
    (18, "说起慕容烈，北地小儿不敢夜啼。"),
    (18, "朝廷追赠沈穆为太尉，谥曰忠武。"),
]
