import pytest
from django.contrib.auth import get_user_model

from entities.models import Entity, PendingItem, StateChange
from entities.selectors import entity_state_as_of
from entities.services.ingest import extraction_ingest
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("admin", "admin@example.com", "pw-admin-123")
    client.force_login(user)
    return client


@pytest.fixture
def book():
    book = book_row_make(chapters=5)
    entity_make(book, "linfeng", "林风", aliases=["小风"], tier="核心", base_state={"hp": 10})
    entity_make(book, "jianlao", "剑老")
    extraction_ingest(
        book=book,
        number=2,
        payload={
            "entities_new": [
                {"suggested_id": "heiyiren", "name": "黑衣人", "type": "角色", "confidence": 0.2},
                {"suggested_id": "zhaoyuan", "name": "赵元", "type": "角色", "confidence": 0.45},
            ],
            "state_changes": [{"entity_id": "linfeng", "field": "hp", "op": "inc", "new": -3, "confidence": 0.3}],
            "uncertain": [{"mention": "那人", "candidates": ["jianlao"], "confidence": 0.3}],
        },
    )
    return book


def _action(admin_client, model, action, pks, **extra):
    data = {"action": action, "_selected_action": [str(pk) for pk in pks], **extra}
    return admin_client.post(f"/admin/entities/{model}/", data, follow=True)


def _messages(resp) -> list[str]:
    return [str(m) for m in resp.context["messages"]]


def test_pending_queue_is_sorted_lowest_confidence_first(admin_client, book):
    resp = admin_client.get("/admin/entities/pendingitem/")
    assert resp.status_code == 200
    assert [p.confidence for p in resp.context["cl"].result_list] == [0.2, 0.3, 0.3, 0.45]


def test_confirm_and_reject_actions_go_through_services(admin_client, book):
    held = PendingItem.objects.filter(kind__in=["entity_new", "state_change"]).order_by("pk")
    resp = _action(admin_client, "pendingitem", "confirm_selected", [p.pk for p in held])
    assert _messages(resp) == ["确认：成功 3 项，失败 0 项"]
    assert set(Entity.objects.values_list("entity_id", flat=True)) == {"linfeng", "jianlao", "heiyiren", "zhaoyuan"}
    assert entity_state_as_of(entity=Entity.objects.get(entity_id="linfeng")) == {"hp": 7}

    uncertain = PendingItem.objects.get(kind="uncertain")
    resp = _action(admin_client, "pendingitem", "confirm_selected", [uncertain.pk])
    assert _messages(resp) == [
        f"确认：成功 0 项，失败 1 项；#{uncertain.pk}: 待确认项 #{uncertain.pk} 需要选择一个实体"
    ]
    page = _action(admin_client, "pendingitem", "confirm_as", [uncertain.pk])
    assert "确认为指定实体" in page.content.decode()
    resp = _action(admin_client, "pendingitem", "confirm_as", [uncertain.pk], entity="剑老", apply="1")
    assert _messages(resp) == ["确认为 jianlao：成功 1 项，失败 0 项"]
    assert Entity.objects.get(entity_id="jianlao").first_appearance == 2


def test_reject_action(admin_client, book):
    pks = list(PendingItem.objects.values_list("pk", flat=True))
    resp = _action(admin_client, "pendingitem", "reject_selected", pks)
    assert _messages(resp) == ["拒绝：成功 4 项，失败 0 项"]
    assert PendingItem.objects.filter(status="rejected").count() == 4


def test_merge_action_with_target_form(admin_client, book):
    pks = list(Entity.objects.filter(entity_id__in=["linfeng", "jianlao"]).values_list("pk", flat=True))
    form = _action(admin_client, "entity", "merge_selected", pks)
    assert "保留的实体" in form.content.decode()
    resp = _action(admin_client, "entity", "merge_selected", pks, target="小风", apply="1")
    assert _messages(resp) == [
        "已将 1 个实体并入 linfeng（aliases 2，appearances 0，state_changes 0，relationships 0，relationships_dropped 0）"
    ]
    assert sorted(Entity.objects.get(entity_id="linfeng").aliases.values_list("alias", flat=True)) == [
        "jianlao",
        "剑老",
        "小风",
    ]


def test_entity_change_page_shows_inlines_and_state(admin_client, book):
    lin = Entity.objects.get(entity_id="linfeng")
    resp = admin_client.get(f"/admin/entities/entity/{lin.pk}/change/")
    body = resp.content.decode()
    assert resp.status_code == 200
    assert "当前状态（重放）" in body and "关系（本实体 → 对方）" in body and "状态变更" in body


def test_state_change_admin_validates_through_the_service(admin_client, book):
    lin = Entity.objects.get(entity_id="linfeng")
    bad = admin_client.post(
        "/admin/entities/statechange/add/",
        {"entity": lin.pk, "chapter": 3, "field": "hp", "op": "inc", "old": "null", "new": '"many"', "reason": ""},
    )
    assert "inc 的增量必须是数字" in bad.content.decode()
    ok = admin_client.post(
        "/admin/entities/statechange/add/",
        {"entity": lin.pk, "chapter": 3, "field": "hp", "op": "inc", "old": "null", "new": "5", "reason": "服丹"},
    )
    assert ok.status_code == 302
    assert StateChange.objects.get(source="curation").seq == 1
    assert entity_state_as_of(entity=lin, number=3) == {"hp": 15}


def test_alias_admin_marks_generic_through_the_service(admin_client, book):
    from core.models import Chapter
    from entities.models import Alias, AmbiguousMention, Appearance

    lin = Entity.objects.get(entity_id="linfeng")
    Alias.objects.create(book=book, entity=lin, alias="少年", source="admin")
    Chapter.objects.filter(book=book, number=3).update(body="少年林风，小风。")
    Alias.objects.filter(entity=lin, alias="小风").update(source="file")
    from entities.mentions import mentions_index

    mentions_index(book=book, numbers=None, removed=[])
    assert Appearance.objects.get(entity=lin, chapter=3, source="scan").aliases == {"小风": 1, "少年": 1, "林风": 1}
    resp = _action(admin_client, "alias", "mark_generic", Alias.objects.filter(entity=lin).values_list("pk", flat=True))
    assert _messages(resp) == [
        "已将 1 个别名标为泛称，并重新扫描提及",
        "1 个别名来自书籍文件，未改动：请在 设定/名册.yaml 或角色卡中用 generic_aliases 标注",
    ]
    assert Appearance.objects.get(entity=lin, chapter=3, source="scan").aliases == {"小风": 1, "林风": 1}
    assert list(AmbiguousMention.objects.filter(book=book).values_list("alias", "generic")) == [("少年", True)]
    assert admin_client.get("/admin/entities/alias/?generic__exact=1").status_code == 200


def test_a_forged_post_to_a_card_owned_field_is_refused_naming_the_file(admin_client, tmp_path):
    """Issue 24: a POST naming a field the card owns (not in the form: read-only) changed nothing and
    answered 「成功修改了 实体…」. It is refused whole, with the file to edit."""
    book = book_row_make(chapters=2)
    card = entity_make(book, "jianlao", "剑老", description="残魂")
    Entity.objects.filter(pk=card.pk).update(source="file", source_path="设定/角色/剑老.md")
    url = f"/admin/entities/entity/{card.pk}/change/"
    resp = admin_client.post(url, {"description": "被改了", "archived": "on", "_save": "1"}, follow=True)
    card.refresh_from_db()
    assert (card.description, card.archived) == ("残魂", False)
    (message,) = _messages(resp)
    assert message.startswith("未修改：描述") and "设定/角色/剑老.md" in message
    assert not any("成功" in m for m in _messages(resp))


def test_adding_an_entity_a_chapter_tag_made_is_refused_on_the_form(admin_client):
    """Issue 24: a second entity of a tagged name and type is refused (a rebuild would give the tag's):
    the add form says so, naming the tag's entity, and writes nothing (not a 500)."""
    book = book_row_make(chapters=3)
    entity_make(book, "tianyunzong", "天云宗", type="势力")
    Entity.objects.filter(book=book, entity_id="tianyunzong").update(source="tag", first_appearance=2)
    data = {"book": book.pk, "entity_id": "", "type": "势力", "canonical_name": "天云宗", "tier": "装饰"}
    data |= {"description": "", "base_state": "{}", "_save": "1"}
    for prefix in ("aliases", "aliases-2", "state_changes", "relationships_out", "relationships_in"):
        data |= {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"}
    resp = admin_client.post("/admin/entities/entity/add/", data)
    assert resp.status_code == 200
    assert "已由第2章的实体标签建立（tianyunzong）" in resp.content.decode()
    assert Entity.objects.filter(book=book, canonical_name="天云宗").count() == 1
