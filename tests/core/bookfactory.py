"""Tiny fixture books written into a tmp folder. Teammates may reuse ``book_make``.

The default book (青岚剑录, slug ``mini``) has 3 chapters in 2 volume folders, 2 threads, 1 secret,
2 character cards, a roster, worldview, outlines, a timeline and a style file, plus a draft in
工作区/ and a dot folder that must never be read.
"""

from pathlib import Path

BOOK_YAML = """\
slug: mini
title: 青岚剑录
genre: 仙侠
volumes:
  - number: 1
    name: 青岚初鸣
    chapters: [1, 2]
  - number: 2
    name: 雾海问剑
    chapters: [3, 4]
style_baseline: [1, 2]
thresholds:
  伏笔: 25
"""

CHAPTER_1 = """\
---
title: 山门夜雨
perspective: 林风
story_time: 青岚历三百二十年·春
chapter_position: 推进
hook_type: 危机钩-强
mood_position: 压抑
summary: 林风在雨夜拾得断剑。
threads:
  opens: [伏笔-001]
  advances: []
  closes: []
key_chapter: true
---
夜雨如注，林风拾起断剑。

“你是谁？”林风问。
<entity id="linfeng" />
剑中传出一声叹息……
"""

CHAPTER_2 = """\
---
title: 剑中残魂
perspective: 林风
chapter_position: 过渡
hook_type: 悬念钩-弱
mood_position: 铺垫
threads:
  advances: [伏笔-001, 悬念-001]
---
老者自称剑中残魂！他是谁？
"""

CHAPTER_3 = """\
---
title: 雾海
chapter_position: 日常
mood_position: 小爽
---
雾海茫茫，「到了。」剑老道。
"""

THREAD_1 = """\
---
id: 伏笔-001
title: 断剑之谜
strength: 高
status: 进行
opened: 1
planned_end: 40
---
## 描述
断剑“青岚”的来历。

## 履历
- 第1章：林风雨夜拾得断剑，剑中有声。
- 第2章: 老者自称“剑中残魂”。

## 收尾计划
第40章前后揭示。
"""

THREAD_2 = """\
---
title: 老者身份
strength: 中
opened: 2
---
## 描述
老者是谁？

## 履历
- 第2章：老者不肯道名。
"""

SECRET_1 = """\
---
id: 信息差-001
title: 剑中老者是祖师
known_to:
  - 剑老
  - name: 林风
    since: 20
reader_knows: false
reader_told: null
registered: 2
keywords: [开派祖师, 青岚子]
---
剑中老者正是青岚宗开派祖师青岚子的残魂。
"""

CARD_LINFENG = """\
---
name: 林风
aliases: [小风, {alias: 林宗主, from: 80, note: 接任宗主后}]
tier: 核心
protagonist: true
status: 存活
location: 青岚宗
realm: 炼气三层
possessions: [断剑青岚]
---
## 外貌
清瘦少年。
## 性格
沉静。
"""

CARD_JIANLAO = """\
---
name: 剑老
aliases: [老者]
tier: 重要
---
剑中残魂。
"""

ROSTER = """\
地点:
  - name: 青岚宗
    aliases: [青岚山, 宗门]
    desc: 东域剑修宗门
物品:
  - name: 断剑青岚
    aliases: [断剑]
势力:
  - name: 青岚宗
招式:
  - name: 青岚十三式
    aliases: [十三式]
角色:
  - 王伯
"""

WORLDVIEW = """\
# 世界观
东域九宗。
## 境界
炼气、筑基。
### 炼气
九层。
## 地理
东域。
"""

MASTER_OUTLINE = """\
## 主线
林风寻剑。
## 结局
林风成祖师。
"""

VOLUME_OUTLINE = """\
## 目标
拾剑。
"""

TIMELINE_1 = """\
# 第一卷时间线

| 章 | 书内时间 | 事件 | 在场人物 |
|---|---|---|---|
| 1 | 青岚历三百二十年·春 | 雨夜拾剑 | 林风、剑老 |
| 第2章 | 次日 | 残魂现身 | 林风/剑老 |
"""

STYLE = """\
## 基调
冷峻。
"""

DEFAULT_FILES: dict[str, str] = {
    "book.yaml": BOOK_YAML,
    "定稿/正文/第1卷 青岚初鸣/第0001章.md": CHAPTER_1,
    "定稿/正文/第1卷 青岚初鸣/第0002章.md": CHAPTER_2,
    "定稿/正文/第二卷/第0003章.md": CHAPTER_3,
    "线索/伏笔-001 断剑之谜.md": THREAD_1,
    "线索/悬念-001.md": THREAD_2,
    "信息差/信息差-001.md": SECRET_1,
    "设定/角色/林风.md": CARD_LINFENG,
    "设定/角色/剑老.md": CARD_JIANLAO,
    "设定/名册.yaml": ROSTER,
    "设定/世界观.md": WORLDVIEW,
    "大纲/总纲.md": MASTER_OUTLINE,
    "大纲/卷纲/第1卷.md": VOLUME_OUTLINE,
    "时间线/第一卷.md": TIMELINE_1,
    "文风/基调.md": STYLE,
    "工作区/草稿.md": "---\n: bad: [\n---\n草稿不读\n",
    ".story-system/state.md": "---\n: bad: [\n---\n",
}


def book_write(root: Path, rel: str, text: str) -> Path:
    """Write one file of a book (creating folders) and return its path."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def book_make(root: Path, files: dict[str, str | None] | None = None) -> Path:
    """Write the default mini book into ``root``; ``files`` overrides entries (None removes one)."""
    merged: dict[str, str | None] = {**DEFAULT_FILES, **(files or {})}
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in merged.items():
        if text is not None:
            book_write(root, rel, text)
    return root


def chapter_text(*, title: str = "", body: str = "正文。", **front: object) -> str:
    """A chapter file: ``front`` keys become YAML front matter (lists / dicts rendered inline)."""
    import yaml

    fm = {"title": title, **front} if title else dict(front)
    head = yaml.safe_dump(fm, allow_unicode=True, sort_keys=False, default_flow_style=None).strip() if fm else ""
    return f"---\n{head}\n---\n{body}\n" if head else f"{body}\n"
