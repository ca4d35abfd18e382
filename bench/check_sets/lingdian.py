"""Blind set 5 for the continuity check: 《零点回声》, an original 20-chapter modern web novel (都市 / 悬疑 /
系统流) in a vernacular, dialogue-heavy register with English letters and digits mixed in (U盘, K神, 0点13分,
F级…S级, 【叮！…】 system panels, 微信 lines), written for session 10 of issue 27 (``lingdian.txt`` beside this
module; sets 1–3 use up 水浒传 but 第49回, set 4 is the half-classical 《青崖剑录》). Committed before any
change to the check of that session, measured once on the engine as it was, and not to be tuned on
afterwards. The clean version is the text itself: plants and controls are inserted at run time.

The canon is what its author would declare: cards with aliases (零点侦探 only from 第12章, when the hot
search names 林默; 苏队 only from 第13章, when 苏晴 is made acting captain), a system ladder (F级 < E级 < D级
< C级 < B级 < A级 < S级) with 林默's rises at their chapters (E级 4, D级 9, C级 15, B级 20), the deaths where
the text tells them (周正阳 8, 何明 16, 吴昊 17, 赵国栋 19), items changing hands (翡翠玉坠 5 and back 20,
黑色U盘 8 and 14, 录音笔 11, 钛金卡 13), three secrets (何明 the 内鬼, the 洗钱账本 on the U盘, 沈墨 the
上一任宿主), three threads and a style file (banned 瞬间 / 莫名 / 卧槽).

Traps a check fitted to other books may fall into: the dead quoted by the living (周队说过…, 生前常说),
a handover inside a chapter, a name that is a word inside another (周末, 热可可), Latin letters in names,
ranks and items (K神, C级, 黑色U盘), 【】 system lines that are no quotation, a rank told retrospectively.

``PLANTS``: one line (or front-matter edit) per planted contradiction, 64 over the 15 kinds.
``CONTROLS``: lines that must give no error and no warning."""

from pathlib import Path

SOURCE = str(Path(__file__).resolve().with_name("lingdian.txt"))
FIRST = 1
CHAPTERS = 20

_DEAD = "死亡"

CARDS: dict[str, dict] = {
    "林默": {
        "aliases": ["默哥", "默子", {"alias": "零点侦探", "from": 12, "note": "秦月直播后网友所起的外号"}],
        "等级": "F级",
        "possessions": ["旧怀表"],
    },
    "苏晴": {"aliases": ["苏警官", {"alias": "苏队", "from": 13, "note": "代理支队长后"}]},
    "周正阳": {"aliases": ["周队", "老周"], "possessions": ["黑色U盘"]},
    "陈可": {"aliases": ["K神"]},
    "王大力": {"aliases": ["胖子", "大力"]},
    "林小雨": {"aliases": ["小雨"], "possessions": ["翡翠玉坠"]},
    "秦月": {"aliases": ["秦主播"], "possessions": ["录音笔"]},
    "赵天宇": {"aliases": ["赵少"], "等级": "E级", "possessions": ["钛金卡"]},
    "赵国栋": {"aliases": ["赵董"]},
    "何明": {"aliases": ["何副队", "何队"]},
    "吴昊": {"aliases": ["阿昊"], "等级": "C级"},
    "刘建军": {"aliases": ["刘法医", "老刘"]},
    "沈墨": {"aliases": ["沈先生"], "等级": "S级"},
}

MORE_CARDS: dict[str, dict] = {
    "马东": {"aliases": ["马站长"]},
    "许菲": {"aliases": []},
    "许建国": {"aliases": []},
}

ITEMS = ["黑色U盘", "旧怀表", "录音笔", "钛金卡", "翡翠玉坠"]

CHANGES: dict[int, list[tuple[str, str, str, str]]] = {
    4: [("林默", "set", "等级", "E级")],
    5: [("林小雨", "remove", "possessions", "翡翠玉坠"), ("林默", "add", "possessions", "翡翠玉坠")],
    8: [
        ("周正阳", "remove", "possessions", "黑色U盘"),
        ("林默", "add", "possessions", "黑色U盘"),
        ("周正阳", "set", "status", _DEAD),
    ],
    9: [("林默", "set", "等级", "D级")],
    11: [("秦月", "remove", "possessions", "录音笔"), ("林默", "add", "possessions", "录音笔")],
    13: [("赵天宇", "remove", "possessions", "钛金卡"), ("吴昊", "add", "possessions", "钛金卡")],
    14: [("林默", "remove", "possessions", "黑色U盘"), ("苏晴", "add", "possessions", "黑色U盘")],
    15: [("林默", "set", "等级", "C级")],
    16: [("何明", "set", "status", _DEAD)],
    17: [("吴昊", "set", "status", _DEAD)],
    19: [("赵国栋", "set", "status", _DEAD)],
    20: [
        ("林默", "remove", "possessions", "翡翠玉坠"),
        ("林小雨", "add", "possessions", "翡翠玉坠"),
        ("林默", "set", "等级", "B级"),
    ],
}

SECRETS = [
    {
        "id": "信息差-501",
        "title": "何明是赵国栋安插在警队的内鬼",
        "known_to": ["何明", "赵国栋", "吴昊"],
        "reader_told": 15,
        "registered": 5,
        "keywords": ["内鬼"],
    },
    {
        "id": "信息差-502",
        "title": "黑色U盘里是天栋集团的洗钱账本",
        "known_to": ["周正阳", "赵国栋", "林默", "陈可"],
        "reader_told": 10,
        "registered": 7,
        "keywords": ["洗钱账本"],
    },
    {
        "id": "信息差-503",
        "title": "沈墨是零点系统的上一任宿主",
        "known_to": ["沈墨", "林默"],
        "reader_told": 18,
        "registered": 1,
        "keywords": ["上一任宿主"],
    },
]

THREADS = [
    {"id": "悬念-501", "title": "周队是谁杀的", "opened": 8, "planned_end": 17, "closed": 17},
    {"id": "伏笔-501", "title": "小雨的病", "opened": 3, "planned_end": 19, "closed": 19},
    {"id": "伏笔-502", "title": "怀表的来历", "opened": 5, "planned_end": 18, "closed": 18},
]
WEAK_HOOKS = [4, 5, 10, 11, 14, 15]
HOOK_THRESHOLD = 3

CONTINUITY = {
    "realm_field": "等级",
    "realms": ["F级", "E级", "D级", "C级", "B级", "A级", "S级"],
    "realm_levels": [],
}
STYLE = {"banned_words": ["瞬间", "莫名", "卧槽"], "quotes": "“”"}

PLANTS: list[tuple[str, int, object]] = [
    ("inactive_acts", 9, "周正阳在电话里吼道：“别过来！”"),
    ("inactive_acts", 10, "老周掏出手机拨了个号，"),
    ("inactive_acts", 11, "周队拍了拍林默的肩膀。"),
    ("inactive_acts", 12, "周正阳回了一个OK的表情。"),
    ("inactive_acts", 14, "周正阳点了根烟，慢慢说：“这事没完。”"),
    ("inactive_acts", 17, "何明开着警车冲进了小区。"),
    ("inactive_acts", 18, "何副队低声说：“东西在我这儿。”"),
    ("inactive_acts", 18, "吴昊一把揪住林默的衣领，"),
    ("inactive_acts", 19, "吴昊发来一条微信：“今晚十点，老地方。”"),
    ("inactive_acts", 20, "赵董冷笑一声，"),
    ("inactive_acts", 20, "赵国栋签下了那份合同。"),
    ("realm_lower", 8, "吴昊不过是个E级，"),
    ("realm_lower", 11, "林默现在也就F级。"),
    ("realm_lower", 18, "林默只是个D级，"),
    ("realm_jump", 7, "赵天宇已经是B级了，"),
    ("realm_jump", 12, "林默已经是A级，"),
    ("realm_jump", 17, "林默居然已经是S级了。"),
    ("item_not_held", 7, "秦月把翡翠玉坠挂在脖子上，"),
    ("item_not_held", 9, "林小雨握着翡翠玉坠，"),
    ("item_not_held", 10, "王大力拿着黑色U盘，"),
    ("item_not_held", 13, "陈可按下录音笔，"),
    ("item_not_held", 15, "赵天宇掏出钛金卡，"),
    ("item_not_held", 18, "沈墨把旧怀表放在桌上，"),
    ("alias_window", 6, "零点侦探又上热搜了。"),
    ("alias_window", 9, "零点侦探骑车穿过了大桥。"),
    ("alias_window", 11, "苏队把案卷摔在桌上。"),
    ("name_typo", 3, "周正杨把烟头摁灭在烟灰缸里。"),
    ("name_typo", 5, "苏睛皱了皱眉。"),
    ("name_typo", 7, "陈珂在群里发了个红包。"),
    ("name_typo", 9, "赵天雨搂着一个网红走进来。"),
    ("name_typo", 11, "何鸣调出了监控录像。"),
    ("name_typo", 13, "秦玥开了直播。"),
    ("name_typo", 14, "刘建君摘下手套，"),
    ("name_typo", 15, "吴浩把帽檐压得很低。"),
    ("secret_early", 5, "何明就是赵国栋安插在警队的内鬼。"),
    ("secret_early", 6, "U盘里存的是天栋集团的洗钱账本。"),
    ("secret_early", 9, "沈墨正是零点系统的上一任宿主。"),
    ("secret_early", 12, "何明这个内鬼藏得很深。"),
    ("pov_knowledge", 12, {"perspective": "秦月", "line": "秦月知道那U盘里是洗钱账本。"}),
    ("pov_knowledge", 16, {"perspective": "王大力", "line": "王大力心里清楚，何明就是内鬼。"}),
    ("pov_knowledge", 19, {"perspective": "陈可", "line": "陈可早就知道沈墨是上一任宿主。"}),
    ("pov_knowledge", 20, {"perspective": "苏晴", "line": "苏晴知道沈墨是零点系统的上一任宿主。"}),
    ("banned_word", 7, "林默瞬间清醒过来。"),
    ("banned_word", 13, "苏晴莫名有些烦躁。"),
    ("banned_word", 18, "王大力说：“卧槽，这也行？”"),
    ("quote_style", 1, "王大力喊道：「快跑！」"),
    ("quote_style", 4, '陈可说："搞定了。"'),
    ("quote_style", 10, "秦月笑道：『家人们，点点关注。』"),
    ("quote_style", 15, "林默说：‘别动。’"),
    ("thread_unknown", 6, {"advances": ["伏笔-599"]}),
    ("thread_unknown", 15, {"advances": ["悬念-888"]}),
    ("thread_unknown", 16, {"closes": ["伏笔-577"]}),
    ("thread_closed", 18, {"advances": ["悬念-501"]}),
    ("thread_closed", 20, {"advances": ["伏笔-502"]}),
    ("thread_closed", 20, {"advances": ["伏笔-501"]}),
    ("thread_not_open", 2, {"advances": ["伏笔-501"]}),
    ("thread_not_open", 4, {"advances": ["伏笔-502"]}),
    ("thread_not_open", 6, {"advances": ["悬念-501"]}),
    ("thread_due", 17, {"closes": None}),
    ("thread_due", 18, {"closes": None}),
    ("thread_due", 19, {"closes": None}),
    ("weak_hook_streak", 6, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 12, {"hook_type": "悬念-弱"}),
    ("weak_hook_streak", 16, {"hook_type": "悬念-弱"}),
]

CONTROLS: list[tuple[int, str]] = [
    (10, "林默想起周队生前说过的话，眼眶一热。"),
    (11, "林默梦见周正阳站在雨里，冲他摆手。"),
    (12, "苏晴说：“周队要是还在，肯定会骂我们。”"),
    (13, "墓碑上刻着周正阳三个字。"),
    (14, "苏晴说：“他说过‘证据比口供重要’，我一直记得。”"),
    (15, "林默掏出录音笔，"),
    (16, "林默当年还只是F级，"),
    (16, "苏晴把黑色U盘锁进了保险柜。"),
    (17, "往事一幕幕浮现，林默说不出话。"),
    (18, "大家又聊起何明当年的事。"),
    (19, "提起吴昊，道上的人都变了脸色。"),
    (20, "周正阳的遗像挂在支队的荣誉墙上。"),
]
