import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from kernel.exceptions import InvalidInput
from storysystem.conf import CONTRACT_FIELDS
from storysystem.models import ReferenceEntry, ReferenceLibrary, ReferenceTable
from storysystem.services import references_export, references_import
from tests.conftest import REFCSV, REPO

pytestmark = pytest.mark.django_db

SEED = REPO / "storysystem" / "seed"
HEADER = "编号,适用技能,分类,层级,关键词,意图与同义词,适用题材,大模型指令,核心摘要,详细展开,场景类型,毒点\n"


def _rows(path):
    return list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8-sig"), newline="")))


def test_seed_is_loaded_by_migration():
    seed = ReferenceLibrary.objects.get(name="seed")
    counts = {t.name: t.entries.count() for t in seed.tables.all()}
    assert counts == {
        "人设与关系": 4,
        "写作技法": 3,
        "命名规则": 4,
        "场景写法": 4,
        "桥段套路": 4,
        "爽点与节奏": 4,
        "金手指与设定": 4,
        "题材与调性推理": 15,
    }
    route = ReferenceEntry.objects.get(table__library=seed, code="S-GR-001")
    assert route.extra["题材/流派"] == "玄幻退婚流"
    assert route.extra["毒点"] == "反击没有铺垫|打脸收尾太软|配角替主角出头"
    assert route.keywords == "玄幻退婚流|退婚流|废柴逆袭"


def test_reimporting_the_seed_changes_nothing():
    report = references_import(directory=SEED, library="seed")
    assert (report["created"], report["updated"], report["unchanged"]) == (0, 0, 42)
    assert report["tables"]["题材与调性推理"] == {
        "rows": 15,
        "created": 0,
        "updated": 0,
        "unchanged": 15,
        "not_in_file": 0,
    }


def test_refcsv_imports_every_cell(refcsv):
    assert refcsv["created"] == 795 and refcsv["updated"] == 0
    lib = ReferenceLibrary.objects.get(name="refcsv")
    files = sorted(REFCSV.glob("*.csv"))
    assert sorted(t.name for t in lib.tables.all()) == sorted(p.stem for p in files)
    checked = 0
    for path in files:
        header, *rows = _rows(path)
        table = ReferenceTable.objects.get(library=lib, name=path.stem)
        assert table.columns == header
        assert table.has_bom == path.read_bytes().startswith(b"\xef\xbb\xbf")
        entries = {e.code: e for e in table.entries.all()}
        assert len(entries) == len(rows)
        for row in rows:
            entry = entries[row[header.index(table.key_column)]]
            assert entry.raw == row
            for name, cell in zip(header, row, strict=True):
                if name == table.key_column:
                    assert entry.code == cell
                elif name in CONTRACT_FIELDS and table.key_column == "编号":
                    assert getattr(entry, CONTRACT_FIELDS[name]) == cell, (path.name, entry.code, name)
                else:
                    assert entry.extra[name] == cell, (path.name, entry.code, name)
                checked += 1
    assert checked == 11644  # every cell of the ten files


def test_refcsv_second_import_is_idempotent(refcsv):
    again = references_import(directory=REFCSV, library="refcsv")
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 795)
    assert ReferenceEntry.objects.filter(table__library__name="refcsv").count() == 795


def test_refcsv_export_round_trip_is_byte_identical(refcsv, tmp_path):
    written = references_export(directory=tmp_path, library="refcsv")
    assert len(written) == 10
    for path in sorted(REFCSV.glob("*.csv")):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_import_reports_updates_and_keeps_whitespace(tmp_path):
    (tmp_path / "场景写法.csv").write_text(
        HEADER + "X-1,write,战斗,知识补充,打斗,战斗怎么写,全部,指令 ,摘要,展开,战斗,招式堆砌\n", encoding="utf-8"
    )
    first = references_import(directory=tmp_path, library="mine")
    assert (first["created"], first["updated"], first["unchanged"]) == (1, 0, 0)
    entry = ReferenceEntry.objects.get(table__library__name="mine", code="X-1")
    assert entry.instruction == "指令 "
    assert ReferenceTable.objects.get(library__name="mine").has_bom is False
    (tmp_path / "场景写法.csv").write_text(
        "\ufeff" + HEADER + "X-1,write,战斗,知识补充,打斗,战斗怎么写,全部,指令 ,新摘要,展开,战斗,招式堆砌\n",
        encoding="utf-8",
    )
    second = references_import(directory=tmp_path, library="mine")
    assert (second["created"], second["updated"], second["unchanged"]) == (0, 1, 0)
    assert ReferenceEntry.objects.get(pk=entry.pk).summary == "新摘要"
    assert ReferenceTable.objects.get(library__name="mine").has_bom is True


def test_broken_csv_gives_row_numbered_errors_and_writes_nothing(tmp_path):
    good = "X-1,write,战斗,知识补充,打斗,战斗怎么写,全部,指令,摘要,展开,战斗,毒\n"
    (tmp_path / "场景写法.csv").write_text(
        HEADER
        + good
        + ",write,战斗,知识补充,打斗,战斗怎么写,全部,指令,摘要,展开,战斗,毒\n"
        + good
        + "X-2,write,战斗\n",
        encoding="utf-8",
    )
    with pytest.raises(InvalidInput) as exc:
        references_import(directory=tmp_path, library="broken")
    assert exc.value.extra["errors"] == [
        "场景写法.csv 第3行：缺少编号",
        "场景写法.csv 第4行：编号 'X-1' 与第2行重复",
        "场景写法.csv 第5行：列数为 3，表头有 12 列",
    ]
    assert not ReferenceLibrary.objects.filter(name="broken").exists()


def test_import_command_prints_counts_and_fails_with_row_errors(tmp_path, capsys):
    call_command("import_references", str(SEED), "--library", "seed")
    out = capsys.readouterr().out
    assert "题材与调性推理: 15 行，新建 0，更新 0，不变 15，文件中已无 0" in out
    assert out.strip().endswith("资料库 seed：新建 0，更新 0，不变 42")
    call_command("import_references", str(SEED), "--library", "copy", "--json")
    assert json.loads(capsys.readouterr().out)["created"] == 42
    (tmp_path / "bad.csv").write_text("编号,关键词\n,打斗\n", encoding="utf-8")
    with pytest.raises(CommandError, match="bad.csv 第2行：缺少编号"):
        call_command("import_references", str(tmp_path))
    with pytest.raises(CommandError, match="目录不存在"):
        call_command("import_references", str(tmp_path / "nope"))


def test_dry_run_writes_nothing():
    report = references_import(directory=SEED, library="trial", dry_run=True)
    assert report["created"] == 42 and report["dry_run"] is True
    assert not ReferenceLibrary.objects.filter(name="trial").exists()


def test_seed_export_round_trip(tmp_path):
    references_export(directory=tmp_path, library="seed")
    for path in sorted(SEED.glob("*.csv")):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_seed_routing_table_has_at_least_twelve_genres_and_every_route_table_exists():
    rows = ReferenceEntry.objects.filter(table__library__name="seed", table__name="题材与调性推理")
    genres = [r.extra["题材/流派"] for r in rows]
    assert len(genres) == 15 and len(set(genres)) == 15
    seed_tables = set(ReferenceTable.objects.filter(library__name="seed").values_list("name", flat=True))
    for r in rows:
        for column in ("推荐基础检索表", "推荐动态检索表"):
            assert set(r.extra[column].split("|")) <= seed_tables, (r.code, column)


def test_export_command_and_admin_library_zip(tmp_path, capsys, admin_client):
    import zipfile

    call_command("export_references", str(tmp_path), "--library", "seed")
    assert len(capsys.readouterr().out.splitlines()) == 8
    assert (tmp_path / "桥段套路.csv").read_bytes() == (SEED / "桥段套路.csv").read_bytes()
    with pytest.raises(CommandError, match="资料库 'nope' 不存在"):
        call_command("export_references", str(tmp_path), "--library", "nope")
    seed = ReferenceLibrary.objects.get(name="seed")
    resp = admin_client.post(
        "/admin/storysystem/referencelibrary/", {"action": "export_csv", "_selected_action": [seed.pk]}
    )
    assert resp["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(resp.content))
    assert sorted(archive.namelist())[0] == "seed/人设与关系.csv"
    assert archive.read("seed/题材与调性推理.csv") == (SEED / "题材与调性推理.csv").read_bytes()
