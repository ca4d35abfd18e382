"""The test suite's builders (no JSON blobs), in three kinds:

- **Book folders on disk** — ``book_folder_make(root, files)`` writes the mini book (青岚剑录, slug
  ``mini``): 3 chapters in 2 volume folders, 2 threads, 1 secret, 2 character cards, a roster,
  worldview, outlines, a timeline and a style file, plus a draft in 工作区/ and a dot folder that must
  never be read; ``files`` overrides entries (None removes one). ``book_write`` writes one file,
  ``chapter_text`` renders a chapter with front matter. Feed the folder to ``book_rebuild``.
- **Bare rows** — ``book_row_make(slug, chapters)`` (a book with empty chapters) and
  ``entity_make`` (an entity with aliases), for entity tests that need no files.
- **A populated book** — ``book_populated_make(slug, chapters=40)`` builds 青岚 (slug ``qinglan``)
  row by row, with values the dashboard tests assert exactly: 40 chapters of 1000+n characters in
  two volumes; 伏笔-001 last advanced in chapter 3 (hung 37 > 30: overdue), 悬念-001 advanced in
  chapter 38 (hung 2), 感情线-001 closed; 林风's realm changes at chapters 10 and 30; one
  relationship; two pending items; two contradicted facts. ``user_make`` adds a superuser who signs
  in with ``PASSWORD``.
"""

from pathlib import Path

import yaml
from django.contrib.auth import get_user_model

from core.models import Book, Chapter, Volume
from entities.models import Alias, Appearance, Entity, PendingItem, Relationship, RelationshipEvent, StateChange
from memory.models import Fact
from threads.models import Secret, Thread, ThreadHistoryEntry

# ── book folders on disk ───────────────────────────────────────────────────────────────────────

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


def book_folder_make(root: Path, files: dict[str, str | None] | None = None) -> Path:
    """Write the default mini book into ``root``; ``files`` overrides entries (None removes one)."""
    merged: dict[str, str | None] = {**DEFAULT_FILES, **(files or {})}
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in merged.items():
        if text is not None:
            book_write(root, rel, text)
    return root


def chapter_text(*, title: str = "", body: str = "正文。", **front: object) -> str:
    """A chapter file: ``front`` keys become YAML front matter (lists / dicts rendered inline)."""
    fm = {"title": title, **front} if title else dict(front)
    head = yaml.safe_dump(fm, allow_unicode=True, sort_keys=False, default_flow_style=None).strip() if fm else ""
    return f"---\n{head}\n---\n{body}\n" if head else f"{body}\n"


# ── bare rows ───────────────────────────────────────────────────────────────────────────────────


def book_row_make(slug: str = "qinglan", chapters: int = 0) -> Book:
    """A bare book row (青岚剑录) with ``chapters`` empty chapters: for entity tests."""
    book = Book.objects.create(slug=slug, title="青岚剑录", root=f"/tmp/{slug}")
    Chapter.objects.bulk_create(
        [Chapter(book=book, number=n, title=f"第{n}章", body="") for n in range(1, chapters + 1)]
    )
    return book


def entity_make(book: Book, entity_id: str, name: str, type: str = "角色", aliases=(), **fields) -> Entity:
    entity = Entity.objects.create(book=book, entity_id=entity_id, canonical_name=name, type=type, **fields)
    for alias in aliases:
        Alias.objects.create(book=book, entity=entity, alias=alias)
    return entity


# ── a populated book (the dashboard's) ─────────────────────────────────────────────────────────

PASSWORD = "dash-pass-123"


def user_make(username: str = "curator"):
    """A superuser who signs in with ``PASSWORD``."""
    return get_user_model().objects.create_superuser(username=username, email="", password=PASSWORD)


def book_populated_make(slug: str = "qinglan", chapters: int = 40) -> Book:
    """The dashboard's book, built row by row (see the module docstring for what it holds)."""
    book = Book.objects.create(
        slug=slug,
        title="青岚剑录",
        genre="仙侠",
        root=f"/tmp/{slug}",
        thresholds={"伏笔": 30, "悬念": 10, "感情线": 20, "secret_accumulation": 15},
    )
    half = chapters // 2
    Volume.objects.create(book=book, number=1, name="青岚初鸣", start_chapter=1, end_chapter=half)
    Volume.objects.create(book=book, number=2, name="雾海问剑", start_chapter=half + 1, end_chapter=chapters)
    Chapter.objects.bulk_create(
        Chapter(
            book=book,
            number=n,
            volume=1 if n <= half else 2,
            title=f"第{n}章标题",
            word_count=1000 + n,
            opens=["伏笔-001"] if n == 1 else [],
            advances=["伏笔-001"] if n == 3 else (["悬念-001"] if n == 38 else []),
        )
        for n in range(1, chapters + 1)
    )
    overdue = Thread.objects.create(
        book=book, thread_id="伏笔-001", type="伏笔", title="断剑之谜", strength="高", opened_chapter=1, planned_end=40
    )
    ThreadHistoryEntry.objects.create(thread=overdue, order=1, chapter=1, text="林风雨夜拾得断剑")
    ThreadHistoryEntry.objects.create(thread=overdue, order=2, chapter=3, text="老者自称剑中残魂")
    fresh = Thread.objects.create(book=book, thread_id="悬念-001", type="悬念", title="雾海来客", opened_chapter=35)
    ThreadHistoryEntry.objects.create(thread=fresh, order=1, chapter=38, text="来客留下玉简")
    Thread.objects.create(
        book=book,
        thread_id="感情线-001",
        type="感情线",
        title="师姐",
        status="已收尾",
        opened_chapter=2,
        closed_chapter=20,
    )
    Secret.objects.create(
        book=book,
        secret_id="信息差-001",
        title="剑中老者是祖师",
        known_to=["剑老", {"name": "林风", "since": 20}],
        registered_chapter=3,
        keywords=["开派祖师"],
        content="剑中老者正是开派祖师青岚子的残魂。",
    )
    linfeng = Entity.objects.create(
        book=book,
        entity_id="linfeng",
        type="角色",
        canonical_name="林风",
        tier="核心",
        is_protagonist=True,
        base_state={"realm": "炼气三层", "location": "青岚宗"},
        first_appearance=1,
        last_appearance=chapters,
    )
    jianlao = Entity.objects.create(book=book, entity_id="jianlao", type="角色", canonical_name="剑老", tier="重要")
    Alias.objects.create(book=book, entity=linfeng, alias="小风")
    StateChange.objects.create(book=book, entity=linfeng, chapter=10, field="realm", op="set", new="炼气五层")
    StateChange.objects.create(book=book, entity=linfeng, chapter=30, field="realm", op="set", new="筑基初期")
    rel = Relationship.objects.create(
        book=book, from_entity=linfeng, to_entity=jianlao, type="师徒", description="剑老收林风为徒", chapter=5
    )
    RelationshipEvent.objects.create(relationship=rel, chapter=5, description="剑老收林风为徒")
    Appearance.objects.bulk_create(
        Appearance(book=book, entity=linfeng, chapter=n, count=n % 5 + 1) for n in range(1, chapters + 1)
    )
    PendingItem.objects.create(
        book=book, chapter=12, kind="entity_new", payload={"name": "王伯", "type": "角色"}, confidence=0.3
    )
    PendingItem.objects.create(
        book=book, chapter=14, kind="entity_new", payload={"name": "李四", "type": "角色"}, confidence=0.4
    )
    for key, value in (("f1", "炼气五层"), ("f2", "炼气六层")):
        Fact.objects.create(
            book=book,
            key=key,
            category=Fact.Category.CHARACTER,
            subject="林风",
            field="realm",
            value=value,
            status=Fact.Status.CONTRADICTED,
            source_chapter=12,
        )
    return book
