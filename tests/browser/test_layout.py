"""Layout in a real browser at laptop (1280 px) and phone (390 px) width, on the demo book: no
element wider than the viewport on any dashboard page or the main admin pages, the book menu at
most two lines tall, the relationship graph inside its box, Chinese labels on the entity and
pending admin pages; and the memory page's curator actions, clicked."""

import re

import pytest

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from memory.models import Fact
from tests.browser.conftest import login, shot
from tests.conftest import DEMO_BOOK
from tests.factories import book_populated_make, user_make
from webnovel.demo import demo_extractions_ingest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1280, 390)
DASHBOARD = [
    "/dashboard/",
    "/dashboard/demo-book/",
    "/dashboard/demo-book/threads/",
    "/dashboard/demo-book/threads/悬念-001/",
    "/dashboard/demo-book/entities/",
    "/dashboard/demo-book/entities/linfeng/",
    "/dashboard/demo-book/entities/linfeng/?as_of=10",
    "/dashboard/demo-book/secrets/?leaks=1",
    "/dashboard/demo-book/context/?chapter=25&budget=1200",
    "/dashboard/demo-book/style/",
    "/dashboard/demo-book/memory/",
    "/dashboard/demo-book/continuity/",
    "/dashboard/demo-book/continuity/?start=1&end=24",
]
ADMIN = [
    "/admin/",
    "/admin/entities/entity/",
    "/admin/entities/pendingitem/",
    "/admin/memory/fact/",
    "/admin/threads/thread/",
    "/admin/webnovel/chapter/",
    "/admin/webnovel/apikey/add/",
]
# Allowed Latin in a label: identifiers that are names, not English words
LATIN_OK = {"id", "api", "bom", "token"}

# Elements whose right edge passes the viewport and that no scrolling box of their own clips
OVERFLOW_JS = """() => {
  const vw = document.documentElement.clientWidth;
  const clipped = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const ox = getComputedStyle(p).overflowX;
      if ((ox === 'auto' || ox === 'scroll' || ox === 'hidden') && p.getBoundingClientRect().right <= vw + 1) return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || getComputedStyle(el).visibility === 'hidden') continue;
    if ((r.right > vw + 1 || r.left < -1) && !clipped(el)) {
      out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && el.className.baseVal === undefined ? '.' + el.className : '') + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
    }
  }
  return {vw, scroll: document.documentElement.scrollWidth, out: out.slice(0, 10)};
}"""


@pytest.fixture
def demo():
    user_make()
    assert book_rebuild(root=DEMO_BOOK)["ok"]
    book = Book.objects.get(slug="demo-book")
    demo_extractions_ingest(book=book)
    return {
        "entity": book.entities.get(entity_id="linfeng").pk,
        "pending": book.pending_items.order_by("pk").values_list("pk", flat=True).first(),
    }


def _fits(page, url: str) -> None:
    result = page.evaluate(OVERFLOW_JS)
    assert result["scroll"] <= result["vw"], (url, result)
    assert result["out"] == [], (url, result)


def _slug(url: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", url.lower()).strip("-") or "root"


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_fits_the_viewport(demo, browser_page, width):
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    login(page, next_path="/dashboard/demo-book/")
    pages = [
        *DASHBOARD,
        *ADMIN,
        f"/admin/entities/entity/{demo['entity']}/change/",
        f"/admin/entities/pendingitem/{demo['pending']}/change/",
    ]
    for url in pages:
        assert page.goto(url).status == 200, url
        _fits(page, url)
        if "/dashboard/demo-book/" in url:
            links = page.eval_on_selector_all(
                "nav.book-nav a", "els => [...new Set(els.map(e => Math.round(e.getBoundingClientRect().top)))]"
            )
            assert len(links) <= 2, (url, links)  # the menu: at most two lines
    shot(page, f"layout-pending-change-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_graph_inside_its_box(demo, browser_page, width):
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    login(page, next_path="/dashboard/demo-book/entities/linfeng/")
    box = page.locator(".graph-box").bounding_box()
    svg = page.locator(".graph-box svg").bounding_box()
    assert svg["x"] >= box["x"] and svg["x"] + svg["width"] <= box["x"] + box["width"] + 0.5
    assert page.locator("svg.chapter-axis text.mark-label").count() >= 3  # the state changes, written out
    assert page.inner_text("#as-of option:checked") == "现在（第24章）"
    page.goto("/dashboard/demo-book/entities/linfeng/?as_of=10")
    assert page.inner_text("#as-of option:checked") == "第10章"
    shot(page, f"entity-{width}")


def _labels(page) -> list[str]:
    return page.eval_on_selector_all(
        # the page's own content (the nav sidebar's screen-reader headers are Django's, not ours)
        ", ".join(
            f"#content {sel}"
            for sel in ("label", "thead th", "#changelist-filter summary", ".inline-group h2", "fieldset > h2")
        ),
        "els => els.map(e => e.innerText.trim()).filter(Boolean)",
    )


def test_entity_and_pending_admin_pages_have_no_english_labels(demo, browser_page):
    page = browser_page
    login(page, next_path="/admin/entities/entity/")
    for url in [
        "/admin/entities/entity/",
        f"/admin/entities/entity/{demo['entity']}/change/",
        "/admin/entities/pendingitem/",
        f"/admin/entities/pendingitem/{demo['pending']}/change/",
    ]:
        page.goto(url)
        labels = _labels(page)
        assert labels, url
        english = [t for t in labels if any(w.lower() not in LATIN_OK for w in re.findall(r"[A-Za-z]{2,}", t))]
        assert english == [], (url, english)
    page.goto("/admin/entities/pendingitem/")
    rows = page.eval_on_selector_all("td.field-sentence, th.field-sentence", "els => els.map(e => e.innerText)")
    # held by the sample extractions: a 0.35 state change (chapter 8) and an uncertain mention (chapter 6)
    assert any(re.match(r"^沈墨 的 势力 → 幽冥殿，置信度 0\.\d\d，来自第8章抽取$", r) for r in rows), rows
    assert any("候选：" in r and "shenmo" not in r for r in rows), rows
    assert "网文连续性数据库" in page.inner_text("#site-name")
    shot(page, "admin-pending-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "admin-pending-390")


@pytest.fixture
def contradicted():
    user_make()
    book_populated_make()
    return list(Fact.objects.filter(status="contradicted").order_by("key").values_list("key", flat=True))


def test_memory_page_actions_work(contradicted, browser_page):
    page = browser_page
    login(page, next_path="/dashboard/qinglan/memory/")
    assert page.inner_text('[data-stat="contradicted"]') == "2"
    first = contradicted[0]
    page.click(f"#fact-{first} button.confirm")
    page.wait_for_selector("ul.messages li.success")
    assert "已裁决：采纳" in page.inner_text("ul.messages")
    assert page.inner_text('[data-stat="contradicted"]') == "0"
    # edit the adopted fact: opens the form, saves a revision from chapter 30
    # the adopted fact has left the attention list: it is edited in the full list
    adopted = f"#list-fact-{first}"
    assert page.locator(adopted).get_attribute("data-status") == "active"
    page.goto(f"/dashboard/qinglan/memory/{adopted}")  # a link to a folded fact opens its folds
    assert page.locator(f"{adopted} details.edit summary").is_visible()
    page.click(f"{adopted} details.edit summary")
    page.fill(f"{adopted} input[name=value]", "筑基初期")
    page.fill(f"{adopted} input[name=chapter]", "30")
    page.click(f"{adopted} button.save")
    page.wait_for_selector("ul.messages li.success")
    assert "为「筑基初期」（第30章起）" in page.inner_text("ul.messages")
    # mark it outdated
    revised = page.locator("article.fact", has_text="筑基初期").first
    revised.evaluate(
        "el => { for (let e = el; e; e = e.parentElement) if (e.tagName === 'DETAILS') e.open = true;"
        " el.querySelector('details.fact-body').open = true; }"
    )
    revised.locator("button.outdate").click()
    page.wait_for_selector("ul.messages li.success")
    assert "标为过时" in page.inner_text("ul.messages")
    page.set_viewport_size({"width": 390, "height": 844})
    _fits(page, "memory")
    shot(page, "memory-actions-390")


DEAD_SPEAKS = "---\nchapter: 25\n---\n林风抬头。\n赵乾冷笑道：“你们谁也走不了。”\n他眼前一花，瞬间到了门口。\n"


@pytest.mark.parametrize("width", WIDTHS)
def test_continuity_page_checks_a_pasted_draft_and_folds_waived_findings(demo, browser_page, width):
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    login(page, next_path="/dashboard/demo-book/continuity/")
    # the re-check of the last 20 chapters: chapter 7's two findings are waived, folded
    assert page.inner_text('#recheck [data-stat="range"]') == "第5–24章"
    folded = page.locator("#chapter-7 details.waived-findings")
    assert folded.locator("summary").inner_text() == "已豁免 2 条"
    assert not folded.locator("article.finding").first.is_visible()
    folded.locator("summary").click()
    assert folded.locator("article.finding").first.is_visible()
    _fits(page, "continuity re-check")
    shot(page, f"continuity-recheck-{width}")
    page.click('nav.book-nav a:has-text("概览")')
    page.click('nav.book-nav a:has-text("机检")')
    page.fill("#draft-text", DEAD_SPEAKS)
    page.click('#draft button[type="submit"]')
    page.wait_for_selector("#draft-findings")
    groups = page.eval_on_selector_all("#draft-findings .finding-group", "els => els.map(e => e.dataset.severity)")
    assert groups == ["error", "warning"]
    first = page.locator("#draft-findings article.finding").first
    assert "赵乾 已「伏诛」，却在本章行动或说话" in first.inner_text()
    first.locator(".evidence a").click()  # the evidence's chapter page
    page.wait_for_url("**/admin/webnovel/chapter/*/change/")
    page.go_back()
    page.fill("#draft-text", DEAD_SPEAKS)
    page.fill('input[name="chapter"]', "第二十五")
    page.click('#draft button[type="submit"]')
    assert page.inner_text("#draft .error-message") == "章节号必须是整数，收到 '第二十五'"
    page.fill('input[name="chapter"]', "")
    page.click('#draft button[type="submit"]')
    page.wait_for_selector("#draft-findings")
    _fits(page, "continuity draft")
    links = page.eval_on_selector_all(
        "nav.book-nav a", "els => [...new Set(els.map(e => Math.round(e.getBoundingClientRect().top)))]"
    )
    assert len(links) <= 2, links
    shot(page, f"continuity-draft-{width}")


# Rendered size (CSS px) of the smallest label of the visible bar chart on a page
BAR_TEXT_JS = """(sel) => {
  const svgs = [...document.querySelectorAll(sel)].filter(s => s.getBoundingClientRect().width > 0);
  const sizes = svgs.flatMap(s => [...s.querySelectorAll('text.label')].map(t => t.getBoundingClientRect().height));
  return {charts: svgs.map(s => s.getAttribute('class')), smallest: Math.min(...sizes)};
}"""


@pytest.mark.parametrize("url", ["/dashboard/demo-book/threads/", "/dashboard/demo-book/secrets/"])
def test_bar_charts_are_readable_on_a_phone(demo, browser_page, url):
    page = browser_page
    login(page, next_path=url)
    wide = page.evaluate(BAR_TEXT_JS, "svg.bar-rows, svg.bar-chart")
    assert set(wide["charts"]) == {"chart bar-chart"} and wide["smallest"] >= 12, wide
    page.set_viewport_size({"width": 390, "height": 844})
    phone = page.evaluate(BAR_TEXT_JS, "svg.bar-rows, svg.bar-chart")
    # the stacked layout, its labels about as large as the page's own text (the wide one gave ~6 px)
    assert set(phone["charts"]) == {"chart bar-rows"} and phone["smallest"] >= 12, phone
    _fits(page, url)
    shot(page, f"bars-{_slug(url)}-390")


def test_memory_health_loops_read_on_a_phone(demo, browser_page):
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, next_path="/dashboard/demo-book/memory/")
    reasons = page.locator("table.health-loops td.reason")
    assert reasons.count() >= 1
    box = reasons.first.bounding_box()
    assert box["width"] >= 300, box  # a card row across the screen, not a column a few characters wide
    _fits(page, "memory")
    page.locator("#health").scroll_into_view_if_needed()
    shot(page, "memory-health-390", full_page=False)
