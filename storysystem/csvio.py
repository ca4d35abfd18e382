"""Reading and writing reference CSVs without losing a cell.

Pure functions (no ORM; the one setting read is the file-size cap) so the data migration that loads the seed can use them too. The csv module
is enough here: the files are plain RFC 4180 CSV; what needs care is BOMs, the key column and
row-numbered errors.
"""

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from kernel.safefs import regular_file_read
from storysystem.conf import CONTRACT_FIELDS

BOM = "\ufeff"


@dataclass
class ParsedRow:
    number: int  # 1-based record number in the file; the header is row 1
    code: str
    cells: list[str]
    contract: dict[str, str]  # model field name -> cell
    extra: dict[str, str]  # header -> cell for non-contract columns


@dataclass
class ParsedTable:
    name: str
    path: Path
    columns: list[str]
    key_column: str
    has_bom: bool
    line_terminator: str
    rows: list[ParsedRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


NAME_MAX = 100  # ReferenceEntry.code / key column; ReferenceTable.name allows 200


def table_parse(path: Path) -> ParsedTable:
    """Parse one CSV file; problems go to ``errors`` as Chinese messages naming file and row. Only a
    regular file is read, and at most ``WEBNOVEL_FILE_MAX_BYTES`` of it: a reference table is a few hundred
    KB, and the same cap as a book file keeps /dev/zero and a stray dump out."""
    shown = path.name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    try:
        path.name.encode("utf-8")
        data, _mtime = regular_file_read(path, max_bytes=settings.WEBNOVEL_FILE_MAX_BYTES)
    except UnicodeEncodeError:
        data, problem = b"", "文件名不是 UTF-8 编码，请改名"
    except OSError as exc:
        data, problem = b"", f"无法读取：{exc.strerror or exc}"
    else:
        problem = ""
    table = ParsedTable(
        name=shown[:-4] if shown.endswith(".csv") else shown,
        path=path,
        columns=[],
        key_column="编号",
        has_bom=data.startswith(BOM.encode("utf-8")),
        line_terminator="\r\n" if b"\r\n" in data else "\n",
    )
    if problem:
        table.errors.append(f"{shown}：{problem}")
        return table
    if len(table.name) > 200:
        table.errors.append(f"{shown}：表名超过 200 个字符")
        return table
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        table.errors.append(f"{shown}：不是 UTF-8 编码（字节位置 {exc.start}）")
        return table
    if "\x00" in text:
        # PostgreSQL text refuses NUL; say where instead of failing at the insert
        line = text.count("\n", 0, text.index("\x00")) + 1
        table.errors.append(f"{shown} 第{line}行：含 NUL 字符（\\x00）")
        return table
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        table.errors.append(f"{shown}：CSV 格式错误：{exc}")
        return table
    if not records:
        table.errors.append(f"{path.name}：文件为空，缺少表头")
        return table
    header = records[0]
    table.columns = header
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        table.errors.append(f"{path.name} 第1行：表头重复：{'、'.join(dupes)}")
        return table
    if any(not h.strip() for h in header):
        table.errors.append(f"{path.name} 第1行：表头有空列名")
        return table
    table.key_column = "编号" if "编号" in header else header[0]
    if len(table.key_column) > NAME_MAX:
        table.errors.append(f"{shown} 第1行：键列名超过 {NAME_MAX} 个字符")
        return table
    key_index = header.index(table.key_column)
    seen: dict[str, int] = {}
    for number, cells in enumerate(records[1:], start=2):
        if not any(c.strip() for c in cells):
            continue  # a blank line carries no cell
        if len(cells) != len(header):
            table.errors.append(f"{path.name} 第{number}行：列数为 {len(cells)}，表头有 {len(header)} 列")
            continue
        code = cells[key_index].strip()
        if not code:
            table.errors.append(f"{path.name} 第{number}行：缺少{table.key_column}")
            continue
        if len(code) > NAME_MAX:
            table.errors.append(f"{path.name} 第{number}行：{table.key_column} 超过 {NAME_MAX} 个字符")
            continue
        if code in seen:
            table.errors.append(f"{path.name} 第{number}行：{table.key_column} '{code}' 与第{seen[code]}行重复")
            continue
        seen[code] = number
        contract: dict[str, str] = {}
        extra: dict[str, str] = {}
        for name, cell in zip(header, cells, strict=True):
            if name in CONTRACT_FIELDS and table.key_column == "编号":
                if name != "编号":
                    contract[CONTRACT_FIELDS[name]] = cell
            elif name != table.key_column:
                extra[name] = cell
        table.rows.append(ParsedRow(number=number, code=code, cells=list(cells), contract=contract, extra=extra))
    return table


def folder_parse(directory: Path) -> list[ParsedTable]:
    """Every ``*.csv`` of ``directory`` (not recursive), sorted by name."""
    return [table_parse(p) for p in sorted(directory.glob("*.csv"))]


def row_cells(*, columns: list[str], key_column: str, code: str, contract: dict[str, str], extra: dict) -> list[str]:
    """The cells of a row in header order, rebuilt from the stored fields (the inverse of parsing)."""
    cells = []
    for name in columns:
        if name == key_column:
            cells.append(code)
        elif name in CONTRACT_FIELDS and key_column == "编号":
            cells.append(contract.get(CONTRACT_FIELDS[name], ""))
        else:
            cells.append(str(extra.get(name, "")))
    return cells


def table_render(*, columns: list[str], rows: list[list[str]], has_bom: bool, line_terminator: str = "\n") -> bytes:
    """CSV bytes in the dialect the table was read in."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=line_terminator)
    writer.writerow(columns)
    writer.writerows(rows)
    return ((BOM if has_bom else "") + out.getvalue()).encode("utf-8")
