"""Every dashboard page on the two real books: the demo book (examples/demo-book) and 西游记."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from core.selectors import style_drift
from entities.selectors import entity_appearances
from tests.conftest import CORPUS, DEMO_BOOK
from tests.factories import user_make
from threads.selectors import thread_list_overdue
from webnovel.demo import demo_extractions_ingest

pytestmark = pytest.mark.django_db

XIYOUJI = CORPUS / "xiyouji.txt"
XIYOUJI_ALIASES = CORPUS / "xiyouji_aliases.json"
PAGES = ["", "threads/", "entities/", "secrets/", "context/", "style/"]


@pytest.fixture
def curator(client):
    client.force_login(user_make())
    return client


@pytest.fixture
def demo():
    """The demo book as ``demo_setup`` leaves it: rebuilt (its chapters' entity tags applied) and the
    sample extractions of examples/demo-extractions ingested."""
    assert book_rebuild(root=DEMO_BOOK)["ok"]
    book = Book.objects.get(slug="demo-book")
    demo_extractions_ingest(book=book)
    return book


def _text(html: str) -> str:
    html = re.sub(r"<svg.*?</svg>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_demo_every_page_renders(curator, demo):
    for page in PAGES:
        assert curator.get(f"/dashboard/demo-book/{page}").status_code == 200, page


def test_demo_overview(curator, demo):
    html = curator.get("/dashboard/demo-book/").content.decode()
    assert '<dd data-stat="chapters">24</dd>' in html
    assert '<dd data-stat="words">9743</dd>' in html
    assert '<dd data-stat="current">24</dd>' in html
    assert re.search(r'data-stat="overdue"><a [^>]*>1</a>', html)
    # held by the sample extractions: an uncertain mention (chapter 6) and a 0.35 state change (chapter 8)
    assert re.search(r'data-stat="pending">\s*<a [^>]*>2</a>', html)


def test_demo_board_agrees_with_the_overdue_selector(curator, demo):
    html = curator.get("/dashboard/demo-book/threads/").content.decode()
    overdue = [t["id"] for t in thread_list_overdue(book=demo)["threads"]]
    assert overdue == ["悬念-001"]
    rows = re.findall(r'<tr class="overdue">\s*<td><a href="[^"]+">(\S+) ', html)
    assert rows == overdue
    # 悬念-001 last advanced in chapter 8; now 24; threshold 10
    assert '<td data-label="已悬">16 / 10</td>' in html


def test_demo_thread_page(curator, demo):
    html = curator.get("/dashboard/demo-book/threads/悬念-001/").content.decode()
    assert '<dd data-stat="hang">16 / 10</dd>' in html
    assert "逾期线 18" in html


def _relationship_rows(html: str) -> list[tuple[str, str, str, str]]:
    return re.findall(
        r"<tr><td><a [^>]*>(\S+)</a></td><td>(\S+)</td><td><a [^>]*>(\S+)</a></td><td>[^<]*</td><td>(\d+)</td></tr>",
        html,
    )


def test_demo_entity_page(curator, demo):
    html = curator.get("/dashboard/demo-book/entities/linfeng/").content.decode()
    assert '青岚剑子 <small class="muted">（第13章起）</small>' in html
    assert html.count('class="col"') == 24  # appears in every chapter
    # now: the tags of chapters 11 and 20 raised the realm, chapter 24 reached the 雾海
    assert '<td data-field="realm">筑基初期</td>' in html
    assert '<td data-field="location">雾海</td>' in html
    assert '<td data-field="possessions">断剑青岚、雾海图</td>' in html
    # every chapter with a change is a choice of the as-of selector (0 = the card)
    choices = re.findall(r'<option value="(\d+)"', html)
    assert choices == ["0", "3", "4", "9", "11", "14", "20", "21", "24"]
    assert html.count('<li class=""><span class="chapter">') == 11  # 10 tag changes + 1 of the chapter-3 extraction
    assert _relationship_rows(html) == [
        ("剑老", "师徒", "林风", "3"),
        ("苏晚晴", "同门", "林风", "6"),
        ("沈墨", "敌对", "林风", "8"),
    ]


def test_demo_entity_page_as_of(curator, demo):
    def page(as_of: int) -> str:
        return curator.get(f"/dashboard/demo-book/entities/linfeng/?as_of={as_of}").content.decode()

    start = page(0)
    assert "状态（截至第0章）" in start
    assert '<td data-field="realm">炼气三层</td>' in start
    assert '<td data-field="possessions">断剑青岚</td>' in start
    assert _relationship_rows(start) == []
    seventh = page(7)
    assert '<td data-field="realm">炼气三层</td>' in seventh
    assert '<td data-field="skills">听雨诀</td>' in seventh
    assert [row[1] for row in _relationship_rows(seventh)] == ["师徒", "同门"]
    eleventh = page(11)
    assert '<td data-field="realm">炼气五层</td>' in eleventh
    assert '<td data-field="skills">听雨诀、青岚十三式</td>' in eleventh
    twentieth = page(20)
    assert '<td data-field="realm">筑基初期</td>' in twentieth
    assert '<td data-field="location">剑冢</td>' in twentieth
    # changes after the chosen chapter are listed but marked as later
    assert twentieth.count('<li class="later">') == 2


def test_demo_other_characters_change(curator, demo):
    wangbo = curator.get("/dashboard/demo-book/entities/wangbo/?as_of=14").content.decode()
    assert '<td data-field="wound">幽冥掌旧伤</td>' in wangbo
    assert 'data-field="wound"' not in curator.get("/dashboard/demo-book/entities/wangbo/").content.decode()
    zhaoqian = curator.get("/dashboard/demo-book/entities/zhaoqian/").content.decode()
    assert '<td data-field="status">伏诛</td>' in zhaoqian


def test_demo_secrets_page(curator, demo):
    assert "运行泄露扫描" in curator.get("/dashboard/demo-book/secrets/").content.decode()
    html = curator.get("/dashboard/demo-book/secrets/?leaks=1").content.decode()
    text = _text(html)
    assert "发现 1 处" in text
    assert "第7章 第7行 信息差-001 青岚子 林风 读者尚未被告知；视角人物此时不知情" in text
    assert "超过上限：信息差-002" in text


def test_demo_context_preview(curator, demo):
    html = curator.get("/dashboard/demo-book/context/?chapter=25&budget=4000").content.decode()
    assert "主角状态·林风（截至第24章）" in html
    included = int(re.search(r'data-stat="included">(\d+)<', html).group(1))
    assert html.count('<tr class="included">') == included > 0
    tight = curator.get("/dashboard/demo-book/context/?chapter=25&budget=300").content.decode()
    assert int(re.search(r'data-stat="skipped">(\d+)<', tight).group(1)) > 0
    assert "预算不足" in tight


def test_demo_style_drift(curator, demo):
    html = curator.get("/dashboard/demo-book/style/").content.decode()
    drift = style_drift(book=demo)
    assert html.count('<section class="feature"') == len(drift["features"]) == 11
    drifted = [f["feature"] for f in drift["features"] if f["drifted"]]
    assert re.findall(r'<tr class="overdue" data-feature="([a-z_0-9]+)">', html) == drifted
    # 24 chapters in ranges of the 10-chapter baseline: 1–10, 11–20, 21–24
    assert "共 3 段" in html
    assert html.count('class="baseline"') == 11
    # the common phrases of the recent range, the new ones marked
    assert '<tr data-phrase="赵乾被押"><td>赵乾被押 <span class="badge over">新</span></td><td>4</td>' in html


@pytest.fixture
def xiyouji(tmp_path):
    if not XIYOUJI.is_file() or not XIYOUJI_ALIASES.is_file():
        pytest.skip(f"corpus absent: {XIYOUJI}")
    from entities.mentions import mentions_index
    from entities.services.writes import alias_add, entity_create

    out = tmp_path / "xiyouji"
    call_command("import_txt", str(XIYOUJI), str(out), "--slug", "xiyouji", "--json", stdout=StringIO())
    assert book_rebuild(root=out)["ok"]
    book = Book.objects.get(slug="xiyouji")
    for character in json.loads(XIYOUJI_ALIASES.read_text(encoding="utf-8"))["characters"]:
        entity = entity_create(book=book, name=character["name"], type="角色", source="file")
        for alias in character["aliases"]:
            alias_add(entity=entity, alias=alias["alias"], source="file")
    mentions_index(book=book, numbers=None, removed=[])
    return book


@pytest.mark.corpus
def test_xiyouji_every_page_renders(curator, xiyouji):
    for page in PAGES:
        assert curator.get(f"/dashboard/xiyouji/{page}").status_code == 200, page
    html = curator.get("/dashboard/xiyouji/").content.decode()
    assert '<dd data-stat="chapters">100</dd>' in html
    assert '<dd data-stat="words">713459</dd>' in html
    wukong = curator.get("/dashboard/xiyouji/entities/孙悟空/")
    assert wukong.status_code == 200
    page = wukong.content.decode()
    assert "齐天大圣" in page
    # one column per chapter with an unambiguous mention (the entities app's count)
    chapters = entity_appearances(book=xiyouji, ref="孙悟空")["chapters"]
    assert len(chapters) > 90
    assert page.count('class="col"') == len(chapters)
    assert f"出现在 {len(chapters)} 章" in page
