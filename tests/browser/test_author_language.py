"""Issue 33: the memory, context and admin entity pages speak the author's language at laptop and
phone width — no English internals in what the page shows, the 原因 columns readable on a phone."""

import re

import pytest

from tests.browser.conftest import login, shot
from tests.browser.test_layout import demo  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Latin words a page may show: none of the code's keys, ops or sources
INTERNALS = re.compile(
    r"coolpoint|hook|bm25|tokens|spirit_stones|skills|possessions|realm|location|story_system|--persist"
    r"|\binc\b|\badd\b|extraction|migration|\{'|\{\""
)
VISIBLE_TEXT_JS = "() => document.querySelector('#content, main').innerText"


@pytest.mark.parametrize("width", (1280, 390))
def test_no_internals_on_the_memory_context_and_admin_entity_pages(demo, browser_page, width):  # noqa: F811
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    login(page, next_path="/dashboard/demo-book/memory/")
    for url in (
        "/dashboard/demo-book/memory/",
        "/dashboard/demo-book/memory/?q=灵石",
        "/dashboard/demo-book/context/?chapter=25&budget=1200",
        f"/admin/entities/entity/{demo['entity']}/change/",
    ):
        assert page.goto(url).status == 200, url
        text = page.evaluate(VISIBLE_TEXT_JS)
        assert INTERNALS.findall(text) == [], (url, INTERNALS.findall(text)[:10])
        assert page.evaluate("document.documentElement.scrollWidth") <= width, url
    page.goto(f"/admin/entities/entity/{demo['entity']}/change/")
    text = page.evaluate(VISIBLE_TEXT_JS)
    assert "第4章" in text and "灵石 +5" in text and "功法 新增「听雨诀」" in text
    assert "境界：筑基初期" in text
    shot(page, f"admin-entity-{width}")
    page.goto("/dashboard/demo-book/context/?chapter=25&budget=1200")
    reason = page.locator("table.pack-items td.reason").first.bounding_box()
    assert reason["width"] >= (300 if width == 390 else 100), reason  # not a column of 2–3 characters
    shot(page, f"context-{width}")
