"""The book-files app orchestrates: every row it derives from the folder is written by the owning app's
writer (core.writers, threads.services, entities.roster), never by the rebuilder itself."""

import ast
from pathlib import Path

import bookfiles

WRITES = {"delete", "bulk_create", "bulk_update", "save", "create", "get_or_create", "update_or_create"}
RAW = {"execute", "executemany", "cursor", "rows_insert", "rows_update"}


def _receiver_names(node: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} | {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name)
    }


def test_no_module_of_the_book_files_app_writes_a_table():
    root = Path(bookfiles.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module in ("kernel.bulk", "django.db")
                and any(a.name in ("rows_insert", "rows_update", "connection") for a in node.names)
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno} imports {node.module}")
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            name, receiver = node.func.attr, node.func.value
            orm = "objects" in _receiver_names(receiver)
            if name in RAW or (name in WRITES | {"update"} and orm):
                found.append(f"{path.relative_to(root)}:{node.lineno} .{name}()")
    assert found == []
