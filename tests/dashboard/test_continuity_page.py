"""The continuity check's findings page: a pasted draft (POST, CSRF) with its findings grouped by
severity, evidence linked to the chapter's page; the re-check of finalized chapters (default: the
last 20) with waived findings folded; bad input as a Chinese message on the page."""

import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client, override_settings

from bookfiles.rebuilder import book_rebuild
from core.models import Book, Chapter
from memory.models import MemoryHit
from tests.conftest import DEMO_BOOK
from tests.continuity.conftest import draft
from tests.factories import PASSWORD, user_make

pytestmark = pytest.mark.django_db

URL = "/dashboard/demo-book/continuity/"
DEAD_SPEAKS = draft("林风抬头。\n赵乾冷笑道：“你们谁也走不了。”\n他眼前一花，瞬间到了门口。", chapter=25)


@pytest.fixture
def demo(tmp_path) -> Book:
    if not DEMO_BOOK.exists():
        pytest.skip(f"{DEMO_BOOK} is absent")
    root = shutil.copytree(DEMO_BOOK, tmp_path / "demo-book")
    with override_settings(
        WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
    ):
        assert book_rebuild(root=root)["ok"]
    return Book.objects.get(slug="demo-book")


@pytest.fixture
def curator(client):
    client.force_login(user_make())
    return client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _section(html: str, start: str, end: str | None = None) -> str:
    tail = html[html.index(start) :]
    return tail[: tail.index(end)] if end else tail


def test_a_pasted_draft_lists_its_findings_by_severity_with_evidence(curator, demo):
    resp = curator.post(URL, {"text": DEAD_SPEAKS, "chapter": ""})
    assert resp.status_code == 200
    html = resp.content.decode()
    findings = _section(html, 'id="draft-findings"', 'id="recheck"')
    # errors first, then warnings: 赵乾 speaks after his death (line 5), 瞬间 is banned by the style file (line 6)
    assert re.findall(r'data-severity="(\w+)"', findings) == ["error", "warning"]
    assert re.findall(r'data-kind="(\w+)" data-line="(\d+)"', findings) == [
        ("inactive_acts", "5"),
        ("banned_word", "6"),
    ]
    text = _text(findings)
    assert "第5行 · 不能行动的角色在行动或说话" in text
    assert "赵乾 已「伏诛」，却在本章行动或说话" in text
    assert "赵乾冷笑道：“你们谁也走不了" in text
    assert "依据： 赵乾 状态为「伏诛」（截至第24章）" in text
    assert "定稿/正文/第2卷/第0019章.md:43" in text
    assert "建议： 改为回忆或他人提及" in text
    # the evidence's chapter links to that chapter's page
    chapter19 = Chapter.objects.get(book=demo, number=19)
    assert f'<a href="/admin/webnovel/chapter/{chapter19.pk}/change/">第19章《{chapter19.title}》</a>' in findings
    page = _text(html)
    assert "第25章草稿 对照截至第24章" in page
    assert '<dd data-stat="error">1</dd>' in html and '<dd data-stat="warning">1</dd>' in html
    assert "赵乾冷笑道" in _section(html, "<textarea", "</textarea>")  # the draft stays in the form


def _folder(root: str) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in Path(root).rglob("*") if p.is_file()}


def test_the_draft_check_writes_nothing(curator, demo):
    before = (_folder(demo.root), Chapter.objects.filter(book=demo).count(), MemoryHit.objects.count())
    assert curator.post(URL, {"text": DEAD_SPEAKS}).status_code == 200
    assert (_folder(demo.root), Chapter.objects.filter(book=demo).count(), MemoryHit.objects.count()) == before


def test_the_draft_form_needs_the_csrf_token(demo):
    client = Client(enforce_csrf_checks=True)
    user_make()
    assert client.login(username="curator", password=PASSWORD)
    assert client.post(URL, {"text": DEAD_SPEAKS}).status_code == 403
    page = client.get(URL)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    assert client.post(URL, {"text": DEAD_SPEAKS, "csrfmiddlewaretoken": token}).status_code == 200


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"text": "", "chapter": ""}, "草稿为空：请粘贴章节全文（连同开头 --- 之间的章节信息）"),
        ({"text": DEAD_SPEAKS, "chapter": "二十五"}, "章节号必须是整数，收到 '二十五'"),
        ({"text": DEAD_SPEAKS, "chapter": "0"}, "章节号应在 1…"),
        ({"text": "---\nthreads: 5\n---\n正文", "chapter": ""}, "草稿第2行："),
        ({"text": "字" * 200_001, "chapter": ""}, "草稿过长：200001 字符，上限 200000"),
    ],
)
def test_bad_draft_input_is_a_chinese_message_on_the_page(curator, demo, data, message):
    resp = curator.post(URL, data)
    assert resp.status_code == 422
    html = resp.content.decode()
    assert message in _text(html)
    assert 'class="error-message"' in html and "<textarea" in html


def test_the_recheck_defaults_to_the_last_20_chapters_with_waived_findings_folded(curator, demo):
    resp = curator.get(URL)
    assert resp.status_code == 200
    html = resp.content.decode()
    recheck = _section(html, 'id="recheck"')
    assert '<dd data-stat="range">第5–24章</dd>' in recheck
    assert 'value="5"' in recheck and 'value="24"' in recheck
    # chapters 7 and 24 have findings, every one waived (the demo's deliberate plants)
    assert re.findall(r'data-chapter="(\d+)"', recheck) == ["7", "24"]
    chapter7 = _section(recheck, 'data-chapter="7"', 'data-chapter="24"')
    assert 'data-severity="' not in chapter7  # nothing open in chapter 7: all folded
    folded = _section(chapter7, '<details class="waived-findings">', "</details>")
    assert "已豁免 2 条" in folded
    # one line, ordered by severity: the alias inside a quotation is an info since issue 27
    assert re.findall(r'data-kind="(\w+)"', folded) == ["secret_early", "alias_window"]
    assert "演示泄露扫描的有意泄露" in _text(folded)
    chapter24 = _section(recheck, 'data-chapter="24"')
    assert re.findall(r'data-kind="(\w+)"', chapter24) == ["weak_hook_streak"]
    row24 = Chapter.objects.get(book=demo, number=24)
    assert f'<a href="/admin/webnovel/chapter/{row24.pk}/change/">第24章《{row24.title}》</a>' in chapter24


def test_the_recheck_over_a_chosen_range(curator, demo):
    html = curator.get(URL, {"start": "1", "end": "10"}).content.decode()
    recheck = _section(html, 'id="recheck"')
    assert '<dd data-stat="range">第1–10章</dd>' in recheck
    assert re.findall(r'data-chapter="(\d+)"', recheck) == ["7"]
    assert '<dd data-stat="waived">2</dd>' in recheck


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"start": "abc"}, "起始章必须是整数，收到 'abc'"),
        ({"start": "20", "end": "3"}, "结束章（3）不能小于起始章（20）"),
        ({"end": "-1"}, "结束章应在 1…"),
        ({"start": "99999999999999999999"}, "起始章应在 1…"),
    ],
)
def test_a_bad_range_is_a_chinese_message_with_the_form(curator, demo, query, message):
    resp = curator.get(URL, query)
    assert resp.status_code == 422
    html = resp.content.decode()
    assert message in _text(html)
    assert 'name="start"' in html


def test_a_book_without_chapters_is_an_empty_state(curator):
    Book.objects.create(slug="empty", title="空书", root="/tmp/empty")
    resp = curator.get("/dashboard/empty/continuity/")
    assert resp.status_code == 200
    assert "尚无数据：《空书》还没有定稿章节。" in _text(resp.content.decode())


def test_the_page_needs_login_and_the_view_permissions(client, demo):
    assert client.get(URL).status_code == 302
    user = get_user_model().objects.create_user(username="reader", password=PASSWORD)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_book", "view_entity", "view_thread"]),
    )
    client.force_login(user)
    resp = client.get(URL)
    assert resp.status_code == 403 and "threads.view_secret" in resp.content.decode()
    user.user_permissions.add(Permission.objects.get(codename="view_secret"))
    client.force_login(get_user_model().objects.get(pk=user.pk))
    assert client.get(URL).status_code == 200
    assert client.post(URL, {"text": DEAD_SPEAKS}).status_code == 200


def test_the_book_menu_links_the_page(curator, demo):
    html = curator.get("/dashboard/demo-book/").content.decode()
    assert f'<a href="{URL}">机检</a>' in html


def test_a_chapter_with_many_findings_shows_the_first_ones_and_counts_the_rest(curator, demo, monkeypatch):
    from dashboard import continuity_views

    monkeypatch.setattr(continuity_views, "FINDINGS_SHOWN", 1)
    text = draft("赵乾冷笑道：“走。”\n瞬间。\n瞬间。", chapter=25)
    html = curator.post(URL, {"text": text}).content.decode()  # the draft shows five times the chapter cap
    assert len(re.findall(r"<article class=\"finding", html)) == 3
    html = curator.get(URL, {"start": "7", "end": "7"}).content.decode()
    chapter7 = _section(html, 'data-chapter="7"')
    assert len(re.findall(r"<article class=\"finding", chapter7)) == 1  # one of the two waived ones
    assert "已豁免 2 条" in chapter7 and "另有 1 条未显示" in _text(chapter7)
