import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import book_populated_make, user_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def book():
    return book_populated_make()


@pytest.fixture
def curator(client):
    client.force_login(user_make())
    return client


def test_pages_require_login(client, book):
    for url in ["/dashboard/", "/dashboard/qinglan/", "/dashboard/qinglan/threads/"]:
        resp = client.get(url)
        assert resp.status_code == 302
        assert resp["Location"].startswith("/admin/login/?next=/dashboard/")


def test_root_redirects_to_dashboard(client):
    resp = client.get("/")
    assert resp.status_code == 302 and resp["Location"] == "/dashboard/"


def test_admin_links_to_dashboard(curator):
    resp = curator.get("/admin/")
    assert 'href="/dashboard/"' in resp.content.decode()


def test_book_list(curator, book):
    html = curator.get("/dashboard/").content.decode()
    assert "青岚剑录" in html
    assert 'href="/dashboard/qinglan/"' in html
    # 40 chapters of 1000+n characters: 40000 + 820
    assert "<dd>40820</dd>" in html


def test_book_list_empty_state(curator):
    assert "尚无数据" in curator.get("/dashboard/").content.decode()


def test_overview_counts(curator, book):
    resp = curator.get("/dashboard/qinglan/")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert '<dd data-stat="chapters">40</dd>' in html
    assert '<dd data-stat="words">40820</dd>' in html
    assert '<dd data-stat="current">40</dd>' in html
    assert re.search(r'data-stat="overdue"><a [^>]*>1</a>', html)
    # the pending count links to the admin queue filtered to this book
    assert re.search(
        r'data-stat="pending">\s*<a href="/admin/entities/pendingitem/\?book__id__exact=\d+&amp;status__exact=pending">2</a></dd>',
        html,
    )
    assert re.search(
        r'data-stat="contradicted">\s*<a href="/admin/memory/fact/\?book__id__exact=\d+&amp;status__exact=contradicted">2</a>',
        html,
    )
    assert "<svg" in html and "累计字数" in html
    assert "<td>第2卷</td><td>雾海问剑</td><td>21–40</td><td>20</td><td>20610</td>" in html


def test_overview_unknown_book_is_404_page(curator):
    resp = curator.get("/dashboard/nope/")
    assert resp.status_code == 404
    assert "书籍 'nope' 不存在" in unescape(resp.content.decode())


def test_thread_board_highlights_overdue(curator, book):
    html = curator.get("/dashboard/qinglan/threads/").content.decode()
    # 伏笔-001: last activity chapter 3, now 40 → hung 37 of 30, drawn red and listed as overdue
    assert '<tr class="overdue">' in html
    assert '<td data-label="已悬">37 / 30</td>' in html
    assert 'class="bar over"' in html
    assert 'data-value="37"' in html
    # 悬念-001: hung 2 of 10
    assert '<td data-label="已悬">2 / 10</td>' in html
    assert html.count('class="bar over"') == 1
    assert "感情线-001 师姐" in html and "已收尾于第20章" in html


def test_thread_detail(curator, book):
    resp = curator.get("/dashboard/qinglan/threads/伏笔-001/")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "断剑之谜" in html and "逾期" in html
    assert '<dd data-stat="hang">37 / 30</dd>' in html
    assert "第3章 第3章标题</span>：老者自称剑中残魂" in html
    # the axis: two history marks and two front-matter touches (opens 1, advances 3); limit at 3 + 30
    assert html.count('class="mark history"') == 2
    assert html.count('class="mark touch"') == 2
    assert "逾期线 33" in html


def test_thread_detail_unknown_thread_is_404(curator, book):
    resp = curator.get("/dashboard/qinglan/threads/伏笔-999/")
    assert resp.status_code == 404
    assert "线索 '伏笔-999' 不存在（《青岚剑录》）" in unescape(resp.content.decode())


def test_entity_state_as_of(curator, book):
    now = curator.get("/dashboard/qinglan/entities/linfeng/").content.decode()
    assert '<td data-field="realm">筑基初期</td>' in now
    before = curator.get("/dashboard/qinglan/entities/linfeng/?as_of=10").content.decode()
    assert '<td data-field="realm">炼气五层</td>' in before
    assert "截至第10章" in before
    start = curator.get("/dashboard/qinglan/entities/xiaofeng/").status_code
    assert start in (404, 409)
    by_alias = curator.get("/dashboard/qinglan/entities/小风/?as_of=0").content.decode()
    assert '<td data-field="realm">炼气三层</td>' in by_alias


def test_entity_page_charts(curator, book):
    html = curator.get("/dashboard/qinglan/entities/linfeng/").content.decode()
    assert html.count('class="col"') == 40
    assert "师徒" in html and 'class="node center type-角色"' in html
    assert 'href="/dashboard/qinglan/entities/jianlao/">剑老</a></td>' in html
    assert html.count('class="mark change"') == 2


def test_entity_bad_as_of_is_422(curator, book):
    resp = curator.get("/dashboard/qinglan/entities/linfeng/?as_of=abc")
    assert resp.status_code == 422
    assert "参数 as_of 必须是整数" in resp.content.decode()


def test_entity_list_search(curator, book):
    html = curator.get("/dashboard/qinglan/entities/?q=小风").content.decode()
    assert "林风" in html and "剑老</a>" not in html


def test_secrets_page(curator, book):
    html = curator.get("/dashboard/qinglan/secrets/").content.decode()
    assert "剑中老者是祖师" in html
    assert '剑老<small class="muted">（第3章）</small>' in html
    assert '林风<small class="muted">（第20章）</small>' in html


PAGES = [
    "",
    "threads/",
    "threads/伏笔-001/",
    "entities/",
    "entities/linfeng/",
    "entities/linfeng/?as_of=10",
    "secrets/",
    "secrets/?leaks=1",
    "context/",
    "style/",
]


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200, url
    return len(ctx.captured_queries)


def test_query_count_does_not_grow_with_the_book(curator):
    """No query per row: a 400-chapter book costs each page the same number of queries as a 40-chapter one."""
    book_populated_make(slug="small", chapters=40)
    book_populated_make(slug="large", chapters=400)
    for page in PAGES:
        # warm per-process caches first (e.g. other apps' matchers), which are built once, not per row
        _queries(curator, f"/dashboard/small/{page}")
        _queries(curator, f"/dashboard/large/{page}")
        small = _queries(curator, f"/dashboard/small/{page}")
        assert _queries(curator, f"/dashboard/large/{page}") == small, page
        assert small <= 40, page


def test_book_list_is_one_query_for_all_books(curator, django_assert_max_num_queries):
    for n in range(5):
        book_populated_make(slug=f"b{n}", chapters=5)
    with django_assert_max_num_queries(3):  # session, user, books
        curator.get("/dashboard/")


def test_secrets_accumulation(curator, book):
    html = curator.get("/dashboard/qinglan/secrets/").content.decode()
    # registered in chapter 3, now 40, limit 15: accumulated 37, over the limit
    assert 'data-value="37"' in html and 'class="bar over"' in html
    assert "上限 15章" in html
    assert "超过上限：信息差-001" in html


def test_context_preview_lists_included_and_skipped(curator, book):
    resp = curator.get("/dashboard/qinglan/context/?chapter=41&budget=4000")
    assert resp.status_code == 200
    html = resp.content.decode()
    included = int(re.search(r'data-stat="included">(\d+)<', html).group(1))
    skipped = int(re.search(r'data-stat="skipped">(\d+)<', html).group(1))
    assert html.count('<tr class="included">') == included
    assert html.count('<tr class="skipped">') == skipped
    assert "主角状态·林风（截至第40章）" in html


def test_context_preview_bad_budget_keeps_the_form(curator, book):
    resp = curator.get("/dashboard/qinglan/context/?chapter=41&budget=5")
    assert resp.status_code == 422
    html = unescape(resp.content.decode())
    assert "预算必须在 100 到 200000 tokens 之间，收到 5" in html
    assert 'name="budget"' in html


def test_style_page_without_baseline_is_an_empty_state(curator, book):
    resp = curator.get("/dashboard/qinglan/style/")
    assert resp.status_code == 200
    page = unescape(resp.content.decode())
    assert "尚无数据：《青岚剑录》的 book.yaml 没有设置 style_baseline" in page
    assert "例如：style_baseline: [" in page


def test_entity_list_is_capped_with_a_note(curator, book, monkeypatch):
    monkeypatch.setattr("dashboard.views.ENTITIES_SHOWN", 1)
    html = curator.get("/dashboard/qinglan/entities/").content.decode()
    assert "共 2 个，显示前 1 个" in html
    # only 林风: the protagonist comes first
    assert 'href="/dashboard/qinglan/entities/linfeng/"' in html
    assert 'href="/dashboard/qinglan/entities/jianlao/"' not in html
