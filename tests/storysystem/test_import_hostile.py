"""import_references reads only regular files, bounded, and refuses what PostgreSQL would choke on
(issue 19 items 7 and 8): clear errors naming file and row, nothing imported."""

import os
import threading

import pytest

from kernel.exceptions import InvalidInput
from storysystem import csvio
from storysystem.models import ReferenceLibrary
from storysystem.services import references_import

pytestmark = pytest.mark.django_db

HEADER = "编号,适用技能,分类,层级,关键词,意图与同义词,适用题材,大模型指令,核心摘要,详细展开\n"


def _import(folder):
    with pytest.raises(InvalidInput) as exc:
        references_import(directory=folder, library="hostile")
    assert not ReferenceLibrary.objects.filter(name="hostile").exists()
    return exc.value


def test_a_fifo_named_csv_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "管道.csv")
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("table", csvio.folder_parse(tmp_path)), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "reading the CSV folder blocked on a FIFO"
    assert result["table"][0].errors == ["管道.csv：无法读取：不是普通文件（设备、管道或套接字），拒绝读取"]
    assert _import(tmp_path).message == (
        "导入失败：1 处错误；首个：管道.csv：无法读取：不是普通文件（设备、管道或套接字），拒绝读取"
    )


def test_a_link_to_dev_zero_is_refused(tmp_path):
    (tmp_path / "零.csv").symlink_to("/dev/zero")
    assert "零.csv：无法读取：不是普通文件" in _import(tmp_path).message


def test_an_oversized_csv_is_refused_before_it_is_read(tmp_path, settings):
    settings.WEBNOVEL_FILE_MAX_BYTES = 1000
    (tmp_path / "大.csv").write_text(HEADER + "A-1,x,x,x,x,x,x,x,x," + "长" * 2000 + "\n", encoding="utf-8")
    assert "大.csv：无法读取：文件过大" in _import(tmp_path).message


def test_nul_bytes_and_overlong_codes_are_row_errors(tmp_path):
    (tmp_path / "空字符.csv").write_text(HEADER + "A-1,x,x,x,x,x,x,x,摘\x00要,x\n", encoding="utf-8")
    assert _import(tmp_path).message.endswith("首个：空字符.csv 第2行：含 NUL 字符（\\x00）")
    (tmp_path / "空字符.csv").unlink()
    (tmp_path / "长编号.csv").write_text(HEADER + "A" * 101 + ",x,x,x,x,x,x,x,x,x\n", encoding="utf-8")
    assert _import(tmp_path).message.endswith("首个：长编号.csv 第2行：编号 超过 100 个字符")


def test_an_overlong_library_name_is_refused(tmp_path):
    (tmp_path / "表.csv").write_text(HEADER + "A-1,x,x,x,x,x,x,x,x,x\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="资料库名称须为 1–100 个字符"):
        references_import(directory=tmp_path, library="库" * 101)
