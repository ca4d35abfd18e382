"""The same behaviour through the CLI (story_system, story), REST and the admin."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from storysystem.models import ReferenceEntry, StorySetting
from storysystem.selectors import chapter_effective, master_story
from storysystem.services import story_master_build

pytestmark = pytest.mark.django_db

BASE = "/api/books/tuihun/story-system"


def _run(capsys, *args):
    call_command("story_system", *args)
    return capsys.readouterr()


# ---------------------------------------------------------------- CLI


def test_cli_json_without_a_book(capsys):
    out = _run(capsys, "玄幻退婚流").out
    data = json.loads(out)
    assert data["route"]["primary"]["code"] == "S-GR-001"
    assert data["meta"]["book"] is None


def test_cli_markdown_and_explicit_genre(capsys):
    out = _run(capsys, "甜一点", "--genre", "现言", "--format", "markdown").out
    assert out.startswith("## Meta\n- 查询：甜一点\n- 显式题材：现言\n- 推断题材：现言\n")
    assert "## Anti-Patterns（绝对毒点，切勿触碰）\n- `误会拖太久`（来源：S-GR-005）\n" in out


def test_cli_persist_master_then_chapter(book, tmp_path, capsys):
    result = _run(capsys, "玄幻退婚流", "--book", "tuihun", "--persist", "--format", "both")
    assert "已写入 .story-system/MASTER_SETTING.md" in result.err
    assert (tmp_path / ".story-system" / "MASTER_SETTING.json").exists()
    assert master_story(book=book)["meta"]["query"] == "玄幻退婚流"
    _run(
        capsys,
        "压抑一点，后面爆",
        "--book",
        "tuihun",
        "--chapter",
        "15",
        "--persist",
        "--set",
        "本章节奏目标=本章只压不爆",
    )
    assert (tmp_path / ".story-system" / "chapters" / "chapter_015.md").exists()
    assert chapter_effective(book=book, number=15)["fields"]["本章节奏目标"]["value"] == "本章只压不爆"


def test_cli_refusals(book, capsys):
    with pytest.raises(CommandError, match="--persist 与 --chapter 需要 --book"):
        call_command("story_system", "玄幻退婚流", "--persist")
    with pytest.raises(CommandError, match="书籍 'nobook' 不存在"):
        call_command("story_system", "玄幻退婚流", "--book", "nobook")
    with pytest.raises(CommandError, match="还没有故事系统总设定"):
        call_command("story_system", "压抑", "--book", "tuihun", "--chapter", "3")
    _run(capsys, "玄幻退婚流", "--book", "tuihun", "--persist")
    with pytest.raises(CommandError, match="第3章不能修改锁定字段「主角硬约束」"):
        call_command("story_system", "压抑", "--book", "tuihun", "--chapter", "3", "--set", "主角硬约束=主角可以求饶")
    with pytest.raises(CommandError, match="第3章不能删除毒点"):
        call_command("story_system", "压抑", "--book", "tuihun", "--chapter", "3", "--remove-anti-pattern", "当场翻盘")
    with pytest.raises(CommandError, match="--set 需要 字段=值"):
        call_command("story_system", "压抑", "--set", "节奏策略")


def test_story_interfaces_on_the_command_line(book, capsys):
    story_master_build(book=book, query="玄幻退婚流", persist=True)
    call_command("story", "story-system-search", "tuihun", "退婚打脸", "--max-results", "2")
    result = json.loads(capsys.readouterr().out)
    assert [r["code"] for r in result["results"]] == ["S-GR-001", "S-TR-002"]
    call_command("story", "story-system-route", "tuihun", "玄幻退婚流")
    assert json.loads(capsys.readouterr().out)["primary"]["code"] == "S-GR-001"
    call_command("story", "story-system-master", "tuihun")
    assert json.loads(capsys.readouterr().out)["master_constraints"]["核心调性"] == "先抑后扬"
    call_command("story", "story-system-effective", "tuihun", "4")
    assert json.loads(capsys.readouterr().out)["fields"]["核心调性"]["origin"] == "master"


# ---------------------------------------------------------------- REST


def test_rest_search_matches_the_selector(api, book):
    resp = api.get(f"{BASE}/search", {"q": "退婚打脸", "max_results": 3})
    assert resp.status_code == 200
    body = resp.json()
    from storysystem.selectors import story_search

    assert body == json.loads(json.dumps(story_search(book=book, q="退婚打脸", max_results=3)))
    assert [r["code"] for r in body["results"]] == ["S-GR-001", "S-TR-002", "S-TR-001"]
    filtered = api.get(f"{BASE}/search", {"q": "打脸", "table": "桥段套路"}).json()
    assert [r["code"] for r in filtered["results"]] == ["S-TR-002"]
    assert api.get(f"{BASE}/search", {"q": " "}).json() == {"message": "检索词不能为空", "extra": {"field": "q"}}
    assert api.get("/api/books/nobook/story-system/search", {"q": "打脸"}).status_code == 404


def test_rest_build_master_and_chapter_then_reads(api, book, tmp_path):
    resp = api.post(f"{BASE}/build", {"query": "玄幻退婚流"}, content_type="application/json")
    assert resp.status_code == 200
    body = resp.json()
    assert body["persisted"] is True
    assert body["files"] == [".story-system/MASTER_SETTING.json", ".story-system/MASTER_SETTING.md"]
    assert body["story_system"]["master_constraints"]["核心调性"] == "先抑后扬"
    assert api.get(f"{BASE}/master").json() == body["story_system"]
    md = api.get(f"{BASE}/master", {"format": "markdown"})
    assert md["Content-Type"] == "text/markdown; charset=utf-8"
    assert "- `打脸节奏缺最后一拍补刀`（来源：S-PA-002）" in md.content.decode().splitlines()
    assert (tmp_path / ".story-system" / "MASTER_SETTING.md").read_text(encoding="utf-8").count(
        md.content.decode()
    ) == 1
    assert api.get(f"{BASE}/master", {"format": "yaml"}).status_code == 422

    resp = api.post(
        f"{BASE}/build",
        {
            "query": "压抑一点，后面爆",
            "chapter": 15,
            "set": {"本章节奏目标": "本章只压不爆"},
            "add_anti_patterns": ["配角抢戏"],
        },
        content_type="application/json",
    )
    assert resp.status_code == 200
    chapter = api.get(f"{BASE}/chapters/15").json()
    assert chapter == resp.json()["story_system"]
    assert chapter["field_origins"]["本章节奏目标"] == "chapter"
    effective = api.get(f"{BASE}/chapters/15/effective").json()
    assert effective["fields"]["本章节奏目标"] == {
        "value": "本章只压不爆",
        "origin": "chapter",
        "policy": "override_allowed",
        "master_value": "",
    }
    assert effective["fields"]["节奏策略"] == {  # issue 31: the master's long line, locked
        "value": "前三章压到谷底，第三章末给第一次有效反击",
        "origin": "master",
        "policy": "locked",
    }
    assert effective["anti_patterns"][-1]["text"] == "配角抢戏"
    assert (tmp_path / ".story-system/chapters/chapter_015.json").exists()


def test_rest_refusals_and_missing(api, book):
    assert api.get(f"{BASE}/master").status_code == 404
    api.post(f"{BASE}/build", {"query": "玄幻退婚流"}, content_type="application/json")
    resp = api.post(
        f"{BASE}/build", {"query": "x", "chapter": 2, "set": {"核心调性": "轻松"}}, content_type="application/json"
    )
    assert resp.status_code == 422
    assert resp.json()["message"].startswith("第2章不能修改锁定字段「核心调性」")
    resp = api.post(
        f"{BASE}/build",
        {"query": "x", "chapter": 2, "remove_anti_patterns": ["当场翻盘"]},
        content_type="application/json",
    )
    assert resp.status_code == 422
    assert api.get(f"{BASE}/chapters/2").status_code == 404
    assert api.get(f"{BASE}/chapters/2").json()["message"] == "《退婚之后》第2章没有章节设定"
    assert api.post(f"{BASE}/build", {"query": "x", "chapter": 0}, content_type="application/json").status_code == 422


def test_rest_build_needs_a_write_key(client, book):
    from core.services import apikey_create

    _, raw = apikey_create(name="reader", scope="read")
    resp = client.post(f"{BASE}/build", {"query": "玄幻退婚流"}, content_type="application/json", HTTP_X_API_KEY=raw)
    assert resp.status_code == 403
    assert client.get(f"{BASE}/route", {"q": "玄幻退婚流"}, HTTP_X_API_KEY=raw).json()["primary"]["code"] == "S-GR-001"


# ---------------------------------------------------------------- admin


@pytest.fixture
def staff(admin_client):
    return admin_client


def test_admin_builds_a_master_and_refuses_a_locked_chapter_change(staff, book, tmp_path):
    resp = staff.post(
        "/admin/storysystem/storysetting/add/",
        {
            "book": book.pk,
            "chapter": "",
            "query": "玄幻退婚流",
            "explicit_genre": "",
            "overrides": "{}",
            "added_anti_patterns": "[]",
        },
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    assert StorySetting.objects.get(book=book, chapter__isnull=True).data["route"]["primary"]["code"] == "S-GR-001"
    assert (tmp_path / ".story-system" / "MASTER_SETTING.md").exists()
    resp = staff.post(
        "/admin/storysystem/storysetting/add/",
        {
            "book": book.pk,
            "chapter": "5",
            "query": "压抑",
            "explicit_genre": "",
            "overrides": json.dumps({"核心调性": "轻松"}, ensure_ascii=False),
            "added_anti_patterns": "[]",
        },
    )
    assert resp.status_code == 200
    assert "第5章不能修改锁定字段「核心调性」" in resp.content.decode()
    assert not StorySetting.objects.filter(book=book, chapter=5).exists()
    changelist = staff.get("/admin/storysystem/storysetting/")
    assert changelist.status_code == 200 and "总设定" in changelist.content.decode()


def test_admin_edit_entry_goes_through_the_service_and_export(staff):
    entry = ReferenceEntry.objects.get(table__library__name="seed", code="S-TR-002")
    page = staff.get(f"/admin/storysystem/referenceentry/{entry.pk}/change/")
    assert page.status_code == 200
    data = {
        "table": entry.table_id,
        "code": entry.code,
        "position": entry.position,
        "skills": entry.skills,
        "category": entry.category,
        "level": entry.level,
        "keywords": entry.keywords + "|啪啪打脸",
        "intents": entry.intents,
        "genres": entry.genres,
        "instruction": entry.instruction,
        "summary": entry.summary,
        "detail": entry.detail,
        "extra": json.dumps(entry.extra, ensure_ascii=False),
    }
    assert staff.post(f"/admin/storysystem/referenceentry/{entry.pk}/change/", data).status_code == 302
    from storysystem.selectors import reference_search

    assert reference_search(query="啪啪打脸", max_results=1)["results"][0]["code"] == "S-TR-002"
    table = entry.table
    resp = staff.post("/admin/storysystem/referencetable/", {"action": "export_csv", "_selected_action": [table.pk]})
    assert resp.status_code == 200 and resp["Content-Type"] == "text/csv; charset=utf-8"
    text = resp.content.decode("utf-8-sig")
    assert "打脸|当众打脸|反转|啪啪打脸" in text
    assert text.splitlines()[0].startswith("编号,适用技能,分类,层级,关键词")


def test_admin_pages_render(staff, book):
    story_master_build(book=book, query="玄幻退婚流", persist=True)
    master = StorySetting.objects.get(book=book, chapter__isnull=True)
    for url in (
        "/admin/storysystem/referencelibrary/",
        "/admin/storysystem/referencetable/",
        "/admin/storysystem/referenceentry/?table__name=桥段套路",
        "/admin/storysystem/referenceentry/?q=退婚",
        "/admin/storysystem/storysetting/add/",
        f"/admin/storysystem/storysetting/{master.pk}/change/",
    ):
        assert staff.get(url).status_code == 200, url
    page = staff.get(f"/admin/storysystem/storysetting/{master.pk}/change/").content.decode()
    assert "## Anti-Patterns（绝对毒点，切勿触碰）" in page
    resp = staff.post("/admin/storysystem/storysetting/", {"action": "write_files", "_selected_action": [master.pk]})
    assert resp.status_code == 302


def test_admin_entry_extra_must_be_an_object_and_numbers_become_text(staff):
    entry = ReferenceEntry.objects.get(table__library__name="seed", code="S-PA-003")
    data = {
        f: getattr(entry, f)
        for f in (
            "code",
            "position",
            "skills",
            "category",
            "level",
            "keywords",
            "intents",
            "genres",
            "instruction",
            "summary",
            "detail",
        )
    }
    data["table"] = entry.table_id
    data["extra"] = "[1, 2]"
    page = staff.post(f"/admin/storysystem/referenceentry/{entry.pk}/change/", data)
    assert page.status_code == 200 and "extra 必须是「列名: 文本」的 JSON 对象" in page.content.decode()
    data["extra"] = json.dumps({**entry.extra, "节奏类型": 3}, ensure_ascii=False)
    assert staff.post(f"/admin/storysystem/referenceentry/{entry.pk}/change/", data).status_code == 302
    entry.refresh_from_db()
    assert entry.extra["节奏类型"] == "3" and entry.raw[10] == "3"


def test_cli_takes_the_seed_options(book, tmp_path, capsys):
    # --story-root names the book by its folder; --chapter takes the seed's chapter_015.
    _run(capsys, "玄幻退婚流", "--story-root", str(tmp_path), "--persist")
    result = _run(
        capsys,
        "压抑一点，后面爆",
        "--story-root",
        str(tmp_path),
        "--chapter",
        "chapter_015",
        "--persist",
        "--set",
        "本章输出重点=林风第一次拔剑",
    )
    assert "已写入 .story-system/chapters/chapter_015.json" in result.err
    assert json.loads(result.out)["meta"]["chapter"] == 15
    assert chapter_effective(book=book, number=15)["fields"]["本章输出重点"]["value"] == "林风第一次拔剑"
    assert json.loads(_run(capsys, "x", "--book", "tuihun", "--chapter", "第15章").out)["meta"]["chapter"] == 15
    with pytest.raises(CommandError, match="--chapter 应为章号，如 15、chapter_015 或 第15章（收到 ch15）"):
        call_command("story_system", "x", "--book", "tuihun", "--chapter", "ch15")
    with pytest.raises(CommandError, match="没有以 .* 为文件夹的书籍：先运行 rebuild"):
        call_command("story_system", "x", "--story-root", str(tmp_path / "elsewhere"), "--persist")


def test_cli_csv_dir_imports_the_library_first(db, tmp_path, capsys):
    csv_dir = tmp_path / "mylib"
    csv_dir.mkdir()
    (csv_dir / "桥段套路.csv").write_text(
        "编号,适用技能,分类,层级,关键词,意图与同义词,适用题材,大模型指令,核心摘要,详细展开,桥段名称\n"
        "MY-001,write,桥段,中,雪夜访友,雪夜访友怎么写,全部,写雪,雪夜访友的写法,细节,雪夜访友\n",
        encoding="utf-8",
    )
    result = _run(capsys, "雪夜访友", "--csv-dir", str(csv_dir))
    assert "资料库 mylib：新增 1，更新 0，未变 0" in result.err
    assert ReferenceEntry.objects.filter(table__library__name="mylib", code="MY-001").exists()
    again = _run(capsys, "雪夜访友", "--csv-dir", str(csv_dir))
    assert "资料库 mylib：新增 0，更新 0，未变 1" in again.err
    with pytest.raises(CommandError, match="目录不存在"):
        call_command("story_system", "x", "--csv-dir", str(tmp_path / "none"))


def test_rest_and_cli_routes_say_why_they_fall_back(book, client):
    from core.services import apikey_create

    _, raw = apikey_create(name="route", scope="read", book=None)
    rest = client.get(f"{BASE}/route", {"q": "随便写点什么"}, HTTP_X_API_KEY=raw).json()
    out = StringIO()
    call_command("story", "story-system-route", "tuihun", "随便写点什么", stdout=out)
    cli = json.loads(out.getvalue())
    assert rest == cli
    assert (rest["method"], rest["primary"]) == ("generic", None)
    assert rest["reason"].startswith("查询没有点名任何题材")
    chosen = client.get(f"{BASE}/route", {"q": "玄幻退婚流"}, HTTP_X_API_KEY=raw).json()
    assert (chosen["method"], chosen["reason"]) == ("keyword", None)
