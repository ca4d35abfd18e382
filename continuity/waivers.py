"""Waivers (这是有意安排): a finding an author marked intended is not reported again for that chapter.

They are the author's data, so they live in the book folder, not only in the database:
``<book>/.continuity/waivers.yaml``, a list of ``{chapter, kind, term, note, at}``. A waiver matches
a finding of the same chapter, kind and term (the name, keyword or word the finding is about), so it
survives edits that move the line. The rebuilder never reads dot folders; this module does."""

from pathlib import Path
from typing import Any

import yaml

from bookfiles.parser.markup import yaml_load
from kernel.safefs import regular_file_read

WAIVERS_FILE = ".continuity/waivers.yaml"
WAIVERS_MAX_BYTES = 4 << 20


def waivers_read(*, root: str | Path | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The waivers of a book folder, and the problems of its file (an unreadable file waives nothing)."""
    if not root:
        return [], []
    path = Path(root) / WAIVERS_FILE
    if not path.exists():
        return [], []
    try:
        data, _ = regular_file_read(path, max_bytes=WAIVERS_MAX_BYTES, root=Path(root))
        items = yaml_load(data.decode("utf-8")) or []
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return [], [f"{WAIVERS_FILE} 无法读取，豁免未生效：{exc}"]
    if not isinstance(items, list):
        return [], [f"{WAIVERS_FILE} 应为豁免列表"]
    waivers = [
        w
        for w in items
        if isinstance(w, dict) and isinstance(w.get("chapter"), int) and w.get("kind") and w.get("term") is not None
    ]
    problems = (
        []
        if len(waivers) == len(items)
        else [f"{WAIVERS_FILE} 中 {len(items) - len(waivers)} 条缺少 chapter/kind/term，已忽略"]
    )
    return waivers, problems


def waivers_apply(findings: list[dict[str, Any]], *, number: int, waivers: list[dict[str, Any]]) -> None:
    index = {(w["kind"], str(w["term"])): w for w in waivers if w["chapter"] == number}
    for item in findings:
        waiver = index.get((item["kind"], str(item["term"])))
        if waiver is not None:
            item["waived"] = True
            item["waiver_note"] = str(waiver.get("note") or "")


def waivers_dump(waivers: list[dict[str, Any]]) -> str:
    return (
        "# 机检豁免（这是有意安排）：python manage.py continuity <book> --waive 或 POST /api/books/{book}/continuity/waivers\n"
        + yaml.safe_dump(waivers, allow_unicode=True, sort_keys=False)
    )
