"""Every dashboard page of the demo book in a real browser, at laptop and phone width, with a
screenshot of each in test-artifacts/ (docs/img/ holds a few of them for the README)."""

import pytest

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from tests.browser.conftest import login, shot
from tests.conftest import DEMO_BOOK
from tests.factories import user_make
from webnovel.demo import demo_extractions_ingest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = {
    "overview": ("", "h1"),
    "threads": ("threads/", "svg.bar-chart"),
    "thread": ("threads/悬念-001/", "svg.chapter-axis"),
    "entity": ("entities/linfeng/", "svg.column-chart"),
    "secrets": ("secrets/?leaks=1#leaks", "table.leaks"),
    "context": ("context/?chapter=25&budget=1200", "table.pack-items"),
    "style": ("style/", "svg.line-chart"),
    "memory": ("memory/", "#health"),
    "continuity": ("continuity/", "article.finding"),
}


@pytest.fixture
def demo():
    """The demo book as ``demo_setup`` leaves it (rebuilt, sample extractions ingested)."""
    user_make()
    assert book_rebuild(root=DEMO_BOOK)["ok"]
    demo_extractions_ingest(book=Book.objects.get(slug="demo-book"))


def test_every_demo_page_in_the_browser(demo, browser_page):
    page = browser_page
    login(page, next_path="/dashboard/demo-book/")
    for name, (path, selector) in PAGES.items():
        response = page.goto(f"/dashboard/demo-book/{path}")
        assert response.status == 200, name
        assert page.locator(selector).count() >= 1, name
        shot(page, f"demo-{name}", full_page=name != "memory")  # the memory page is very long
        if name == "secrets":  # the one leak of the demo book: 青岚子 in chapter 7
            assert page.locator("table.leaks tr.overdue").count() == 1
    page.set_viewport_size({"width": 390, "height": 844})
    for name, (path, _) in PAGES.items():
        page.goto(f"/dashboard/demo-book/{path}")
        # readable at phone width: nothing pushes the page wider than the screen
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, name
        if name in ("overview", "threads", "entity", "continuity"):
            shot(page, f"demo-{name}-phone")


def test_demo_entity_as_of_selector(demo, browser_page):
    page = browser_page
    login(page, next_path="/dashboard/demo-book/entities/linfeng/")
    realm = '#entity-state td[data-field="realm"]'
    assert page.inner_text(realm) == "筑基初期"
    assert page.inner_text('#entity-state td[data-field="location"]') == "雾海"
    assert page.locator("svg.graph").count() == 1  # 师徒 / 同门 / 敌对 from the sample extractions
    page.select_option("#as-of", "11")  # submits on change (dashboard.js)
    page.wait_for_url("**as_of=11")
    assert page.inner_text(realm) == "炼气五层"
    page.select_option("#as-of", "0")
    page.wait_for_url("**as_of=0")
    assert page.inner_text(realm) == "炼气三层"
    shot(page, "demo-entity-as-of")
