import re

import pytest

from tests.browser.conftest import login, shot
from tests.factories import book_populated_make, user_make

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def book():
    user_make()
    return book_populated_make()


def test_login_overview_then_overdue_thread(book, browser_page):
    page = browser_page
    login(page)
    shot(page, "books")
    page.click("text=青岚剑录")
    page.wait_for_url("**/dashboard/qinglan/")
    assert page.inner_text('[data-stat="chapters"]') == "40"
    assert page.inner_text('[data-stat="overdue"]') == "1"
    assert page.locator("svg.line-chart polyline").count() == 1
    shot(page, "overview")

    page.click("nav.book-nav >> text=线索")
    page.wait_for_url("**/dashboard/qinglan/threads/")
    assert page.locator("svg.bar-chart .bar.over").count() == 1
    shot(page, "threads-board")

    page.click("tr.overdue a")
    page.wait_for_url(re.compile(r".*/threads/.+-001/$"))
    assert "伏笔-001" in page.inner_text("h1")
    assert page.inner_text('[data-stat="hang"]') == "37 / 30"
    assert page.locator("svg.chapter-axis circle.mark").count() == 4
    shot(page, "thread")


def test_entity_as_of_selector_changes_state(book, browser_page):
    page = browser_page
    login(page, next_path="/dashboard/qinglan/entities/linfeng/")
    assert page.inner_text('#entity-state td[data-field="realm"]') == "筑基初期"
    shot(page, "entity")
    page.select_option("#as-of", "10")  # submits on change (dashboard.js)
    page.wait_for_url("**as_of=10")
    assert page.inner_text('#entity-state td[data-field="realm"]') == "炼气五层"
    page.select_option("#as-of", "0")
    page.wait_for_url("**as_of=0")
    assert page.inner_text('#entity-state td[data-field="realm"]') == "炼气三层"
    shot(page, "entity-as-of")


def test_phone_width_board_fits(book, browser_page):
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, next_path="/dashboard/qinglan/threads/")
    # no horizontal scrolling of the page itself at phone width
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "threads-board-phone")


def test_confirm_pending_item_in_admin_drops_the_count(book, browser_page):
    page = browser_page
    login(page, next_path="/dashboard/qinglan/")
    assert page.inner_text('[data-stat="pending"]') == "2"
    page.click('[data-stat="pending"] a')
    page.wait_for_url("**/admin/entities/pendingitem/**")
    shot(page, "admin-pending-queue")
    page.locator("input.action-select").first.check()
    page.select_option("select[name=action]", "confirm_selected")
    page.click("button[name=index]")
    page.wait_for_selector("ul.messagelist")
    assert "确认：成功 1 项" in page.inner_text("ul.messagelist")
    # back through the admin's "查看站点" link, which leads to the dashboard
    page.click("#user-tools a[href='/dashboard/']")
    page.wait_for_url("**/dashboard/")
    page.click("text=青岚剑录")
    page.wait_for_url("**/dashboard/qinglan/")
    assert page.inner_text('[data-stat="pending"]') == "1"
