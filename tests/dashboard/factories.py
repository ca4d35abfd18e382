"""A small book built row by row, with values the dashboard tests can assert exactly.

青岚 (slug ``qinglan``): 40 chapters of 1000+n characters in two volumes; 伏笔-001 last advanced in
chapter 3 (hung 37 > 30: overdue), 悬念-001 advanced in chapter 38 (hung 2), 感情线-001 closed;
林风's realm changes at chapters 10 and 30; one relationship; two pending items; two contradicted facts.
"""

from django.contrib.auth import get_user_model

from core.models import Book, Chapter, Volume
from entities.models import Alias, Appearance, Entity, PendingItem, Relationship, RelationshipEvent, StateChange
from memory.models import Fact
from threads.models import Secret, Thread, ThreadHistoryEntry

PASSWORD = "dash-pass-123"


def user_make(username: str = "curator"):
    return get_user_model().objects.create_superuser(username=username, email="", password=PASSWORD)


def book_make(slug: str = "qinglan", chapters: int = 40) -> Book:
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
