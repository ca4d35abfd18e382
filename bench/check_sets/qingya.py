"""Blind set 4 for the continuity check: 《青崖剑录》, an original 24-chapter 仙侠 web novel in a
half-classical register (曰 / 道 / 问曰 beside 说; “” quotes with ‘’ nested), written for session 8 of
issue 27 (``qingya.txt`` beside this module; the 水浒传 ranges of sets 1–3 — 第1–48, 50–90, 91–120回 —
are spent, and 西游记 is the tuning bench). Committed before any change to the check of that session,
measured once on the engine as it was, and not to be tuned on afterwards.

The canon is what its author would declare: cards with aliases (青崖剑子 only from 第15章, when the
论剑大会 names him), a 境界 ladder (炼气 < 筑基 < 金丹 < 元婴 < 化神) with the breakthroughs at their
chapters (沈砚 筑基 6, 金丹 16; 秦朗 筑基 12), the deaths where the text tells them (陆沉舟 9, 韩烈 12,
顾长庚 18, 厉无咎 22), items changing hands (寒星剑 6, 青崖令 8, 玲珑镜 13 and back 18, 紫金葫芦 24),
three secrets (顾长庚 the 内应, 沈砚's 剑骨, the 剑冢 map in the 青崖令), three threads and a style file.

The book has traps a check fitted to other books may fall into: an alias that is a word (长庚 in
长庚星, also after his death), a vision of the dead master speaking (第22章), a handover inside a chapter,
a compound surname (钟离寒), a dead master quoted by the living.

``PLANTS``: one line (or front-matter edit) per planted contradiction, 63 over the 15 kinds.
``CONTROLS``: lines that must give no error and no warning."""

from pathlib import Path

SOURCE = str(Path(__file__).resolve().with_name("qingya.txt"))
FIRST = 1
CHAPTERS = 24

_DEAD = "死亡"

CARDS: dict[str, dict] = {
    "沈砚": {
        "aliases": ["砚儿", "沈师兄", {"alias": "青崖剑子", "from": 15, "note": "论剑大会后西荒诸派所称"}],
        "境界": "炼气",
    },
    "苏晚棠": {"aliases": ["晚棠", "苏师妹"], "境界": "筑基", "possessions": ["玲珑镜"]},
    "陆沉舟": {"aliases": ["陆真人", "沉舟真人"], "境界": "元婴", "possessions": ["寒星剑", "青崖令"]},
    "顾长庚": {"aliases": ["长庚", "顾师兄"], "境界": "金丹"},
    "秦朗": {"aliases": ["秦师兄"], "境界": "炼气", "possessions": ["紫金葫芦"]},
    "孟婆婆": {"aliases": []},
    "厉无咎": {"aliases": ["厉老魔"], "境界": "元婴", "possessions": ["血魂幡"]},
    "韩烈": {"aliases": [], "境界": "金丹"},
    "云鹤子": {"aliases": ["云长老"], "境界": "元婴"},
    "钟离寒": {"aliases": ["钟离师兄"], "境界": "金丹"},
    "柳如烟": {"aliases": ["柳师姐"], "境界": "筑基"},
    "方不平": {"aliases": []},
}

MORE_CARDS: dict[str, dict] = {
    "刘三": {"aliases": []},
}

ITEMS = ["寒星剑", "玲珑镜", "青崖令", "紫金葫芦", "血魂幡"]

CHANGES: dict[int, list[tuple[str, str, str, str]]] = {
    6: [
        ("陆沉舟", "remove", "possessions", "寒星剑"),
        ("沈砚", "add", "possessions", "寒星剑"),
        ("沈砚", "set", "境界", "筑基"),
    ],
    8: [("陆沉舟", "remove", "possessions", "青崖令"), ("沈砚", "add", "possessions", "青崖令")],
    9: [("陆沉舟", "set", "status", _DEAD)],
    12: [("韩烈", "set", "status", _DEAD), ("秦朗", "set", "境界", "筑基")],
    13: [("苏晚棠", "remove", "possessions", "玲珑镜"), ("顾长庚", "add", "possessions", "玲珑镜")],
    16: [("沈砚", "set", "境界", "金丹")],
    18: [
        ("顾长庚", "remove", "possessions", "玲珑镜"),
        ("苏晚棠", "add", "possessions", "玲珑镜"),
        ("顾长庚", "set", "status", _DEAD),
    ],
    22: [("厉无咎", "remove", "possessions", "血魂幡"), ("厉无咎", "set", "status", _DEAD)],
    24: [
        ("沈砚", "remove", "possessions", "青崖令"),
        ("秦朗", "remove", "possessions", "紫金葫芦"),
        ("沈砚", "add", "possessions", "紫金葫芦"),
    ],
}

SECRETS = [
    {
        "id": "信息差-401",
        "title": "顾长庚是血煞宗安插在青崖的内应",
        "known_to": ["顾长庚", "厉无咎", "韩烈"],
        "reader_told": 17,
        "registered": 3,
        "keywords": ["内应"],
    },
    {
        "id": "信息差-402",
        "title": "沈砚天生剑骨",
        "known_to": ["陆沉舟", "孟婆婆"],
        "reader_told": 10,
        "registered": 2,
        "keywords": ["剑骨"],
    },
    {
        "id": "信息差-403",
        "title": "青崖令中藏着祖师剑冢之图",
        "known_to": ["陆沉舟", "孟婆婆", "沈砚"],
        "reader_told": 14,
        "registered": 8,
        "keywords": ["剑冢"],
    },
]

THREADS = [
    {"id": "悬念-401", "title": "山上的内应是谁", "opened": 5, "planned_end": 17, "closed": 17},
    {"id": "伏笔-401", "title": "师父之仇", "opened": 9, "planned_end": 23, "closed": 23},
    {"id": "伏笔-402", "title": "剑冢之约", "opened": 14, "planned_end": 22, "closed": 22},
]
WEAK_HOOKS = [4, 5, 10, 11, 19, 20]
HOOK_THRESHOLD = 3

CONTINUITY = {"realm_field": "境界", "realms": ["炼气", "筑基", "金丹", "元婴", "化神"], "realm_levels": []}
STYLE = {"banned_words": ["瞬间", "莫名", "霎那"], "quotes": "“”"}

PLANTS: list[tuple[str, int, object]] = [
    ("inactive_acts", 10, "陆沉舟曰：“砚儿，起来。”"),
    ("inactive_acts", 11, "陆真人拂袖而去。"),
    ("inactive_acts", 13, "韩烈挥鞭赶来，"),
    ("inactive_acts", 14, "陆沉舟问曰：“令牌可在？”"),
    ("inactive_acts", 15, "韩烈大呼：“小子休走！”"),
    ("inactive_acts", 16, "陆沉舟提剑出殿，"),
    ("inactive_acts", 19, "顾长庚冷笑道：“你们都中计了。”"),
    ("inactive_acts", 20, "顾长庚纵身跃上马背，"),
    ("inactive_acts", 23, "厉无咎方知中计，"),
    ("inactive_acts", 24, "厉老魔闻言大怒，"),
    ("realm_lower", 8, "苏晚棠不过是炼气修为。"),
    ("realm_lower", 20, "沈砚如今只是筑基。"),
    ("realm_lower", 21, "钟离寒不过是筑基，"),
    ("realm_jump", 7, "秦朗已是金丹，"),
    ("realm_jump", 10, "苏晚棠已是元婴修士。"),
    ("realm_jump", 17, "沈砚已是化神，"),
    ("item_not_held", 8, "秦朗拔出寒星剑，"),
    ("item_not_held", 11, "柳如烟举起玲珑镜，"),
    ("item_not_held", 15, "苏晚棠祭起玲珑镜，"),
    ("item_not_held", 20, "方不平托着紫金葫芦，"),
    ("item_not_held", 22, "苏晚棠捧着青崖令，"),
    ("item_not_held", 23, "钟离寒握着寒星剑，"),
    ("alias_window", 8, "青崖剑子拔剑出鞘。"),
    ("alias_window", 11, "青崖剑子立在灵前。"),
    ("alias_window", 13, "青崖剑子追出门外。"),
    ("name_typo", 5, "苏晚堂低声道：“小心。”"),
    ("name_typo", 7, "顾长耕在观剑台上督练。"),
    ("name_typo", 9, "厉无究将幡一摇，"),
    ("name_typo", 11, "钟离韩冷哼一声。"),
    ("name_typo", 14, "柳如嫣送来一封信。"),
    ("name_typo", 16, "孟婆娑拄着拐杖进来。"),
    ("name_typo", 19, "云贺子遣人送来书信。"),
    ("name_typo", 21, "方不凭大喊一声，"),
    ("secret_early", 5, "顾长庚原是血煞宗的内应。"),
    ("secret_early", 7, "孟婆婆早看出沈砚生有剑骨。"),
    ("secret_early", 9, "那青崖令中藏着剑冢之图。"),
    ("secret_early", 12, "顾长庚这内应做得滴水不漏。"),
    ("pov_knowledge", 11, {"perspective": "苏晚棠", "line": "苏晚棠早知沈砚身负剑骨。"}),
    ("pov_knowledge", 15, {"perspective": "钟离寒", "line": "钟离寒知道青崖令里藏着剑冢之图。"}),
    ("pov_knowledge", 19, {"perspective": "秦朗", "line": "秦朗知道沈砚生有剑骨。"}),
    ("pov_knowledge", 20, {"perspective": "方不平", "line": "方不平心知顾长庚便是内应。"}),
    ("banned_word", 6, "沈砚瞬间明白过来。"),
    ("banned_word", 16, "秦朗莫名心慌。"),
    ("banned_word", 21, "霎那之间，血光大盛。"),
    ("quote_style", 1, "秦朗道：「今夜雨大。」"),
    ("quote_style", 3, '刘三叫道："看招！"'),
    ("quote_style", 12, "秦朗道：『快走！』"),
    ("quote_style", 18, "苏晚棠叫道：‘沈师兄小心！’"),
    ("thread_unknown", 6, {"advances": ["伏笔-499"]}),
    ("thread_unknown", 16, {"advances": ["悬念-777"]}),
    ("thread_unknown", 21, {"closes": ["伏笔-555"]}),
    ("thread_closed", 19, {"advances": ["悬念-401"]}),
    ("thread_closed", 24, {"advances": ["伏笔-402"]}),
    ("thread_closed", 24, {"advances": ["伏笔-401"]}),
    ("thread_not_open", 3, {"advances": ["悬念-401"]}),
    ("thread_not_open", 8, {"advances": ["伏笔-401"]}),
    ("thread_not_open", 12, {"advances": ["伏笔-402"]}),
    ("thread_due", 17, {"closes": None}),
    ("thread_due", 22, {"closes": None}),
    ("thread_due", 23, {"closes": None}),
    ("weak_hook_streak", 6, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 12, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 21, {"hook_type": "悬念-弱"}),
]

CONTROLS: list[tuple[int, str]] = [
    (10, "沈砚想起师父生前所言，泪如雨下。"),
    (13, "沈砚梦见陆沉舟立在床前，"),
    (14, "孟婆婆道：“你师父在时，也常说这句话。”"),
    (16, "前殿供着陆真人的灵位。"),
    (20, "苏晚棠道：“师父说过‘剑在人在’，我记得。”"),
    (19, "顾长庚当年不过炼气修为，"),
    (21, "沈砚拔出寒星剑，护在苏晚棠身前。"),
    (19, "天边那颗长庚星又亮了。"),
    (14, "众人说起韩烈当年之事。"),
    (24, "说起厉无咎，山下小儿也不敢夜啼。"),
    (17, "往事如烟，说来话长。"),
]
