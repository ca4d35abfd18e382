"""The doors: the command, REST, waivers in the book folder, and the retcon mode over finalized chapters."""

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from bookfiles.rebuilder import book_sync
from continuity.selectors import chapters_check, draft_check
from continuity.services import waiver_add
from tests.continuity.conftest import draft

pytestmark = pytest.mark.django_db

DEAD_SPEAKS = draft("赵乾冷笑道：“你们谁也走不了。”", chapter=25)


def test_every_finalized_demo_chapter_against_its_own_past_has_no_error(demo):
    result = chapters_check(book=demo, start=1)
    assert (result["from"], result["to"]) == (1, 24)
    # the demo obeys its own rules (its style file bans 瞬间, and no chapter uses it): nothing open
    assert result["counts"] == {"error": 0, "warning": 0, "info": 0, "waived": 3}
    waived = {(c["chapter"], f["kind"]) for c in result["chapters"] for f in c["findings"] if f["waived"]}
    assert waived == {(7, "alias_window"), (7, "secret_early"), (24, "weak_hook_streak")}


def test_a_retcon_in_chapter_14_is_found_in_later_chapters(demo):
    before = chapters_check(book=demo, start=15)
    assert before["counts"]["error"] == 0
    # the author revises chapter 14: 王伯 dies of his old wound; he still speaks in chapter 22
    path = Path(demo.root) / "定稿/正文/第2卷/第0014章.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace('<set field="wound" value="幽冥掌旧伤"/>', '<set field="status" value="死亡"/>'), encoding="utf-8"
    )
    with override_settings(
        WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
    ):
        assert book_sync(book=demo)["ok"]
    after = chapters_check(book=demo, start=15)
    speaking = [
        (c["chapter"], f["line"], f["term"])
        for c in after["chapters"]
        for f in c["findings"]
        if f["kind"] == "inactive_acts"
    ]
    # 王伯拄着扫帚在山门口等 (line 24: 拄 is a verb by its part of speech), “……”王伯笑着说 (line 26) and
    # 看见王伯还站在山门口 (line 32)
    assert speaking == [(23, 24, "王伯"), (23, 26, "王伯"), (23, 32, "王伯")]
    assert after["counts"]["error"] == 3


def test_waive_a_finding_writes_the_book_folder_and_reports_it_waived(demo):
    assert draft_check(book=demo, text=DEAD_SPEAKS)["counts"]["error"] == 1
    result = waiver_add(book=demo, number=25, kind="inactive_acts", term="赵乾", note="赵乾的鬼魂托梦")
    assert result["file"] == ".continuity/waivers.yaml"
    saved = (Path(demo.root) / ".continuity/waivers.yaml").read_text(encoding="utf-8")
    assert "赵乾的鬼魂托梦" in saved and "kind: inactive_acts" in saved
    checked = draft_check(book=demo, text=DEAD_SPEAKS)
    assert checked["counts"] == {"error": 0, "warning": 0, "info": 0, "waived": 1}
    assert checked["findings"][0]["waiver_note"] == "赵乾的鬼魂托梦"
    # another chapter is not waived
    assert draft_check(book=demo, text=DEAD_SPEAKS, chapter=26)["counts"]["error"] == 1


def test_command_text_json_stdin_and_exit_status(demo, tmp_path, monkeypatch):
    path = tmp_path / "草稿.md"
    path.write_text(DEAD_SPEAKS, encoding="utf-8")
    out = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("continuity", "demo-book", str(path), stdout=out)
    assert exit_info.value.code == 1
    text = out.getvalue()
    assert "机检《demo-book》第25章草稿（对照截至第24章）：错误 1" in text
    assert "第4行 [错误·不能行动的角色在行动或说话] 赵乾 已「伏诛」，却在本章行动或说话" in text
    assert "定稿/正文/第2卷/第0019章.md:43" in text
    monkeypatch.setattr("sys.stdin", StringIO(draft("林风点了点头。", chapter=25)))
    out = StringIO()
    call_command("continuity", "demo-book", "-", "--json", stdout=out)
    assert json.loads(out.getvalue())["counts"] == {"error": 0, "warning": 0, "info": 0, "waived": 0}
    out = StringIO()
    call_command("continuity", "demo-book", "--from", "20", "--to", "24", "--json", stdout=out)
    assert json.loads(out.getvalue())["counts"]["waived"] == 1
    with pytest.raises(CommandError, match="需要草稿文件"):
        call_command("continuity", "demo-book")
    with pytest.raises(
        CommandError, match=re.escape("草稿第1行：front matter 解析失败：front matter 没有结束的 '---' 行")
    ):
        bad = tmp_path / "bad.md"
        bad.write_text("---\ntitle: x\n正文", encoding="utf-8")
        call_command("continuity", "demo-book", str(bad))


def test_rest_draft_range_waiver_and_chinese_422s(demo, api):
    url = "/api/books/demo-book/continuity"
    response = api.post(url, {"text": DEAD_SPEAKS}, content_type="application/json")
    assert response.status_code == 200
    body = response.json()
    assert body["counts"]["error"] == 1 and body["findings"][0]["line"] == 4
    assert body == draft_check(book=demo, text=DEAD_SPEAKS)
    too_long = api.post(url, {"text": "字" * 200_001}, content_type="application/json")
    assert too_long.status_code == 422
    assert too_long.json()["message"] == "草稿过长：200001 字符，上限 200000"
    bad_fm = api.post(url, {"text": "---\nthreads: 5\n---\n正文"}, content_type="application/json")
    assert bad_fm.status_code == 422
    assert bad_fm.json()["message"] == "草稿第2行：front matter 的 threads 应为 opens/advances/closes 映射，实际为 5"
    assert bad_fm.json()["extra"] == {"field": "text", "line": 2}
    ranged = api.get(url, {"start": 20, "end": 24})
    assert ranged.status_code == 200 and ranged.json()["counts"]["waived"] == 1
    backwards = api.get(url, {"start": 20, "end": 3})
    assert backwards.status_code == 422 and backwards.json()["message"] == "to（3）不能小于 from（20）"
    waived = api.post(
        f"{url}/waivers",
        {"chapter": 25, "kind": "inactive_acts", "term": "赵乾", "note": "托梦"},
        content_type="application/json",
    )
    assert waived.status_code == 201 and waived.json()["count"] == 4
    unknown = api.post(f"{url}/waivers", {"chapter": 25, "kind": "nope", "term": "x"}, content_type="application/json")
    assert unknown.status_code == 422 and unknown.json()["message"].startswith("未知的机检类别 'nope'")
    assert api.post(url, {"text": DEAD_SPEAKS}, content_type="application/json").json()["counts"]["waived"] == 1


def test_a_read_key_may_check_a_draft_but_not_waive(demo):
    from django.contrib.auth.models import Permission, User
    from django.test import Client

    from core.services import apikey_create

    _, raw = apikey_create(name="reader", scope="read")
    reader = Client(HTTP_X_API_KEY=raw)
    url = "/api/books/demo-book/continuity"
    waivers = (Path(demo.root) / ".continuity/waivers.yaml").read_text(encoding="utf-8")
    checked = reader.post(url, {"text": DEAD_SPEAKS}, content_type="application/json")
    assert checked.status_code == 200
    assert checked.json() == draft_check(book=demo, text=DEAD_SPEAKS)
    waive = reader.post(
        f"{url}/waivers", {"chapter": 25, "kind": "inactive_acts", "term": "赵乾"}, content_type="application/json"
    )
    assert waive.status_code == 403
    assert waive.json()["message"] == "该 API 密钥只有读权限，写操作需要 write 密钥"
    assert (Path(demo.root) / ".continuity/waivers.yaml").read_text(encoding="utf-8") == waivers
    # a session with the view permission only: the check yes, the waiver no (still CSRF-checked)
    user = User.objects.create_user("viewer", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="view_book"))
    session = Client()
    session.force_login(user)
    assert session.post(url, {"text": DEAD_SPEAKS}, content_type="application/json").status_code == 200
    denied = session.post(
        f"{url}/waivers", {"chapter": 25, "kind": "inactive_acts", "term": "赵乾"}, content_type="application/json"
    )
    assert denied.status_code == 403
    assert denied.json()["extra"]["missing_permissions"] == ["webnovel.add_book", "webnovel.change_book"]
