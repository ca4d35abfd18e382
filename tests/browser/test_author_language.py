"""Issue 33: the memory, context and admin entity pages speak the author's language at laptop and
phone width — no English internals in what the page shows, the 原因 columns readable on a phone —
and nothing on the issue's pages is clipped or hidden: the pending queue's table fits its box, no
chart label is cut by its chart's edge, every column of the threads table can be read on a phone,
the overview's figures never leave one card alone on a row, the 来源 of a row reads in Chinese."""

import re

import pytest

from core.models import Book
from memory.orchestrator import build_memory_pack
from memory.services import memory_hit_record
from tests.browser.conftest import login, shot
from tests.browser.test_layout import demo  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Latin words a page may show: none of the code's keys, ops, sources, modes or retrieval methods
INTERNALS = re.compile(
    r"coolpoint|hook|bm25|tokens|spirit_stones|skills|possessions|realm|location|story_system|--persist"
    r"|\binc\b|\badd\b|extraction|migration|\{'|\{\""
    r"|\bfile\b|front matter|\bfull\b|\bsimple\b|embeddings|hybrid"
)
VISIBLE_TEXT_JS = "() => document.querySelector('#content, main').innerText"

# What a reader cannot see on the page: a chart label cut by its chart's edge, a table wider than
# its box (columns behind a scroll bar), a column hidden with no other way to read its values
# (a stacked table's cells carry their column's name), the overview's last row of figures one card.
CLIPPED_JS = """() => {
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const out = {labels: [], tables: [], columns: [], lone: []};
  for (const svg of document.querySelectorAll('svg.chart')) {
    if (!shown(svg)) continue;
    const s = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      const cut = Math.max(s.left - r.left, r.right - s.right, s.top - r.top, r.bottom - s.bottom);
      if (r.width > 0 && cut > 0.5) out.labels.push(`${t.textContent} (${cut.toFixed(1)} px)`);
    }
  }
  for (const table of document.querySelectorAll('#content table, main table')) {
    if (!shown(table) || table.closest('#nav-sidebar')) continue;
    const box = table.parentElement.getBoundingClientRect(), r = table.getBoundingClientRect();
    const heads = [...table.querySelectorAll('thead th')];
    if (r.width > box.width + 1) {
      const behind = heads.filter(th => th.getBoundingClientRect().right > box.right + 1).map(th => th.innerText.trim());
      out.tables.push(`${table.className || table.id}: ${Math.round(r.width)} px in ${Math.round(box.width)} px, behind: ${behind}`);
    }
    const headless = table.tHead && getComputedStyle(table.tHead).display === 'none';
    heads.forEach((th, i) => {
      if (!th.innerText.trim() && !th.textContent.trim()) return;  // a column of hidden inputs, no name
      const hidden = getComputedStyle(th).display === 'none';
      for (const row of table.querySelectorAll('tbody tr')) {
        const cell = row.children[i];
        if (!cell || !shown(row) || row.children.length !== heads.length) continue;
        if (!shown(cell) || ((hidden || headless) && i > 0 && !cell.dataset.label)) {
          out.columns.push(`${table.className}: ${th.innerText.trim()}`);
          break;
        }
      }
    });
  }
  for (const grid of document.querySelectorAll('dl.stats.big')) {
    const rows = {};
    for (const card of grid.children) { const top = Math.round(card.getBoundingClientRect().top); rows[top] = (rows[top] || 0) + 1; }
    const counts = Object.keys(rows).sort((a, b) => a - b).map(k => rows[k]);
    if (counts.length > 1 && counts[counts.length - 1] === 1) out.lone.push(counts.join('+'));
  }
  return out;
}"""


@pytest.fixture
def demo_logged(demo):  # noqa: F811
    """The demo book with one context pack logged (the memory page's hit log has a row)."""
    book = Book.objects.get(slug="demo-book")
    memory_hit_record(book=book, pack=build_memory_pack(book=book, number=25, task="write", budget_tokens=1200))
    extraction = book.extractions.order_by("chapter").values_list("pk", flat=True).first()
    return {**demo, "extraction": extraction}


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


@pytest.mark.parametrize("width", (1280, 390))
def test_nothing_clipped_or_hidden_and_no_internals_on_the_issue_pages(demo_logged, browser_page, width):
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    login(page, next_path="/dashboard/demo-book/")
    pages = {
        "/dashboard/demo-book/": "overview",
        "/dashboard/demo-book/threads/": "threads",
        "/dashboard/demo-book/style/": "style",
        "/dashboard/demo-book/continuity/": "continuity",
        "/dashboard/demo-book/memory/": "memory",
        "/admin/entities/pendingitem/": "admin-pending",
        f"/admin/entities/entity/{demo_logged['entity']}/change/": "admin-entity",
    }
    for url, name in pages.items():
        assert page.goto(url).status == 200, url
        text = page.evaluate(VISIBLE_TEXT_JS)
        assert INTERNALS.findall(text) == [], (url, INTERNALS.findall(text)[:10])
        found = page.evaluate(CLIPPED_JS)
        assert found == {"labels": [], "tables": [], "columns": [], "lone": []}, (url, found)
        shot(page, f"issue33-{name}-{width}")
    # the values behind the checks: the rows read in Chinese, the phone shows every thread column
    page.goto("/dashboard/demo-book/memory/")
    hits = page.inner_text("#hits")
    assert "第25章" in hits and "写作" in hits and "完整" in hits and "关键词检索" in hits, hits
    page.goto("/dashboard/demo-book/continuity/")
    assert "章节信息" in page.inner_text("#draft")
    # 来源 in the authors' words (the held write and the extraction are shown as they are stored, JSON)
    for url, source in (
        (f"/admin/entities/entity/{demo_logged['entity']}/change/", "书籍文件"),
        (f"/admin/entities/pendingitem/{demo_logged['pending']}/change/", "抽取"),
        (f"/admin/entities/extraction/{demo_logged['extraction']}/change/", "抽取"),
    ):
        page.goto(url)
        assert page.inner_text("div.field-source_name div.readonly") == source, url
    page.goto("/admin/entities/pendingitem/")
    assert set(
        page.eval_on_selector_all(
            "#result_list thead th", "els => els.map(e => e.innerText.trim().split(/\\s+/).pop())"
        )
    ) >= {
        "类型",
        "状态",
    }
    page.goto("/dashboard/demo-book/threads/")
    first = page.locator("table.threads tbody tr").first
    assert first.locator("td[data-label=强度]").is_visible() and first.locator("td[data-label=计划收尾]").is_visible()
