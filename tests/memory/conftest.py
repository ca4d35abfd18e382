"""A small book built directly with the ORM (no files): 6 chapters, 2 threads, 1 secret, 2 characters
with state changes, a worldview, a volume outline with per-chapter sections and a style rule."""

import pytest

from core.models import Book, Chapter, Document, Section, TimelineRow, Volume
from entities.models import Alias, Entity, StateChange
from kernel import indexing
from threads.models import Secret, Thread, ThreadHistoryEntry

SUMMARIES = {
    1: "林风在雨夜拾得断剑，剑中传出老者之声。",
    2: "林风以断剑击退外门弟子，突破至炼气四层。",
    3: "外门小比，林风与苏晴交手，苏晴点破剑冢传闻。",
    4: "林风夜探藏经阁，得到残图，突破至炼气五层。",
    5: "剑冢开启，林风与苏晴同入剑冢，断剑发出剑鸣。",
    6: "剑冢深处，剑老现身，传授青岚十三式第一式。",
}
MOODS = {1: "压抑", 2: "小爽", 3: "铺垫", 4: "大爽", 5: "铺垫", 6: "转折"}
HOOKS = {1: "危机钩-强", 2: "悬念钩-中", 3: "悬念钩-弱", 4: "危机钩-弱", 5: "悬念钩-弱", 6: "危机钩-强"}


def _doc(book, kind, key, sections):
    doc = Document.objects.create(book=book, kind=kind, key=key, title=key)
    for i, (heading, body) in enumerate(sections):
        Section.objects.create(document=doc, order=i, heading=heading, body=body)
    return doc


def chapter_make(book, n, **extra):
    body = "\n".join(f"第{n}章第{p}段：林风握紧断剑，雨声如注，剑鸣隐隐。" * 3 for p in range(1, 6))
    fields = {
        "volume": 1,
        "title": f"第{n}回",
        "perspective": "林风",
        "story_time": "青岚历三百二十年·春" if n < 4 else "青岚历三百二十年·夏",
        "chapter_position": "推进",
        "hook_type": HOOKS.get(n, ""),
        "mood_position": MOODS.get(n, ""),
        "summary": SUMMARIES.get(n, f"第{n}章摘要"),
        "body": body,
        "word_count": len(body),
    }
    fields.update(extra)
    return Chapter.objects.create(book=book, number=n, **fields)


HOOK = "memory.pipeline.memory_after_chapter"


@pytest.fixture(autouse=True)
def _memory_hook(settings):
    """The memory hook is registered by the memory app (kernel/indexing.py); tests pin it so they do
    not depend on what else is registered or overridden."""
    hooks = indexing.registered(indexing.HOOKS)
    settings.WEBNOVEL_AFTER_CHAPTER_HOOKS = hooks if HOOK in hooks else [*hooks, HOOK]


@pytest.fixture
def book(db):
    book = Book.objects.create(slug="mem", title="青岚剑录", genre="仙侠", root="/nonexistent/mem")
    Volume.objects.create(book=book, number=1, name="青岚初鸣", start_chapter=1, end_chapter=12)
    _doc(
        book,
        Document.Kind.VOLUME_OUTLINE,
        "1",
        [
            ("卷旨", "林风从废材到初露锋芒。"),
            ("第1-2章 拾剑", "林风雨夜拾剑，击退外门弟子。"),
            ("第5章 剑冢", "剑冢开启，林风与苏晴同入剑冢，断剑剑鸣。"),
            ("第7章 剑老传剑", "剑老在剑冢深处传授林风青岚十三式，苏晴在外守候。"),
        ],
    )
    _doc(book, Document.Kind.MASTER_OUTLINE, "总纲", [("结局", "林风重振青岚宗。")])
    _doc(
        book,
        Document.Kind.WORLDVIEW,
        "世界观",
        [("修炼境界", "炼气、筑基、金丹、元婴，每境九层。"), ("剑冢", "剑冢每百年开启一次，只容炼气弟子进入。")],
    )
    _doc(book, Document.Kind.STYLE, "基调", [("对白", "对白简短，不用网络用语。")])
    lin = Entity.objects.create(
        book=book,
        entity_id="linfeng",
        type="角色",
        canonical_name="林风",
        tier="核心",
        is_protagonist=True,
        base_state={"realm": "炼气三层", "location": "青岚宗"},
        source="file",
    )
    Alias.objects.create(book=book, entity=lin, alias="小风")
    su = Entity.objects.create(
        book=book,
        entity_id="suqing",
        type="角色",
        canonical_name="苏晴",
        tier="重要",
        base_state={"realm": "炼气五层"},
        source="file",
    )
    Entity.objects.create(
        book=book, entity_id="jianlao", type="角色", canonical_name="剑老", tier="重要", source="file"
    )
    for n in range(1, 7):
        chapter_make(
            book,
            n,
            opens=["伏笔-001"] if n == 1 else (["悬念-001"] if n == 2 else []),
            closes=["悬念-001"] if n == 4 else [],
        )
    f1 = Thread.objects.create(
        book=book,
        thread_id="伏笔-001",
        type="伏笔",
        title="断剑之谜",
        strength="高",
        status="进行",
        opened_chapter=1,
        planned_end=40,
        description="断剑青岚的来历与剑中老者的身份。",
        closing_plan="于剑冢揭示老者即开派祖师。",
    )
    ThreadHistoryEntry.objects.create(thread=f1, order=0, chapter=1, text="林风拾得断剑。")
    Thread.objects.create(
        book=book,
        thread_id="悬念-001",
        type="悬念",
        title="外门弟子寻衅",
        strength="中",
        status="已收尾",
        opened_chapter=2,
        closed_chapter=4,
        description="谁指使外门弟子寻衅。",
    )
    Secret.objects.create(
        book=book,
        secret_id="信息差-001",
        title="剑老即祖师",
        known_to=[{"name": "剑老"}],
        reader_knows=False,
        registered_chapter=3,
    )
    TimelineRow.objects.create(book=book, volume=1, order=0, chapter=5, event="剑冢开启", present=["林风", "苏晴"])
    StateChange.objects.create(book=book, entity=lin, chapter=2, field="realm", op="set", new="炼气四层")
    StateChange.objects.create(book=book, entity=lin, chapter=4, field="realm", op="set", new="炼气五层")
    StateChange.objects.create(book=book, entity=lin, chapter=4, field="possessions", op="add", new="残图")
    StateChange.objects.create(book=book, entity=su, chapter=3, field="location", op="set", new="外门")
    return book


@pytest.fixture
def filled(book):
    """The book with its memory derived (what the after-chapter hook does after a rebuild)."""
    from memory.pipeline import memory_refresh

    memory_refresh(book=book)
    return book
