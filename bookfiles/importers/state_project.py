"""Import an old project (the plugin's ``.webnovel/state.json`` v5.0 … v6, its chapters and summaries).

The entity tables are written by ``entities.legacy_state.legacy_state_import``; this module runs it (a
dry run inside a transaction that is rolled back, so its summary is exact), converts the old chapter
files into the book format, and with ``commit`` backs up and slims the state file.
"""

import json
from pathlib import Path
from typing import Any

import yaml
from django.db import transaction
from django.utils import timezone

from bookfiles.importers.legacy import legacy_book_yaml, legacy_chapters_plan, legacy_files_write
from bookfiles.importers.project_files import documents_plan, threads_plan
from core.journal import journal_events
from core.models import Book
from entities.legacy_state import MARKER, SLIM_LIMIT, STATE_PATH, legacy_state_import, slim_state, state_file_read
from kernel.exceptions import DomainError
from kernel.safefs import book_file_write
from memory.services import scratchpad_import

SCRATCHPAD_PATH = Path(".webnovel") / "memory_scratchpad.json"


class _DryRun(Exception):
    pass


def state_migrate(*, root: Path, commit: bool = False, book_slug: str | None = None) -> dict:
    """Migrate ``<root>/.webnovel/state.json``. Dry run unless ``commit``; with ``commit`` the file is
    first copied to ``state.json.bak-<timestamp>`` and then rewritten slim."""
    root = root.resolve()
    path = root / STATE_PATH
    state = state_file_read(path=path)
    original_path = path
    marker = state.get(MARKER)
    if isinstance(marker, dict) and marker.get("backup"):
        # Already migrated: re-read the original from its backup so a second run re-checks (and changes nothing).
        original_path = path.parent / marker["backup"]
        state = state_file_read(path=original_path)
    summary: dict[str, Any] = {}
    try:
        with transaction.atomic():
            summary = legacy_state_import(
                root=root, state=state, book_slug=book_slug, source_path=str(original_path), journal=commit
            )
            summary["dry_run"] = not commit
            summary["already_migrated"] = isinstance(marker, dict)
            summary["memory"] = _scratchpad(root=root, slug=summary["book"], journal=commit)
            if not commit:
                raise _DryRun
    except _DryRun:
        pass
    summary["book_files"] = _book_files(root=root, state=state, slug=summary["book"], commit=commit)
    summary["not_taken"] = _not_taken(summary)
    if commit and not isinstance(marker, dict):
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        backup = path.with_name(f"state.json.bak-{stamp}")
        book_file_write(root=root, relative=STATE_PATH.with_name(backup.name), text=path.read_bytes())
        slim = slim_state(
            state=state,
            marker={"by": "webnovel migrate_state", "at": timezone.now().isoformat(), "backup": backup.name,
                    "book": summary["book"]},
        )  # fmt: skip
        book_file_write(root=root, relative=STATE_PATH, text=json.dumps(slim, ensure_ascii=False, indent=2) + "\n")
        summary["backup"] = str(backup)
        summary["slim_bytes"] = path.stat().st_size
        if summary["slim_bytes"] >= SLIM_LIMIT:
            summary["problems"].append(
                f"精简后的 state.json 仍有 {summary['slim_bytes']} 字节（progress 等保留键本身过大）；原文件见备份"
            )
    return summary


def _scratchpad(*, root: Path, slug: str, journal: bool) -> dict[str, Any] | None:
    """The old ``.webnovel/memory_scratchpad.json`` into the book's memory (each item's payload and layer
    kept), in the migration's transaction; None when the project has none."""
    path = root / SCRATCHPAD_PATH
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return {"file": str(path), "error": f"无法读取：{exc}", "created": 0, "skipped": [], "kept": []}
    if journal and _scratchpad_journaled(root=root, data=data):
        # A second migration of the same file changes nothing and journals nothing, as the state's does.
        return {"file": str(path), "unchanged": True, "created": 0, "updated": 0, "skipped": [], "kept": []}
    try:
        result = scratchpad_import(book=Book.objects.get(slug=slug), data=data, journal=journal)
    except DomainError as exc:
        return {"file": str(path), "error": exc.message, "created": 0, "skipped": [], "kept": []}
    return {"file": str(path), **result}


def _scratchpad_journaled(*, root: Path, data: Any) -> bool:
    """Whether the book's journal already holds an import of exactly this scratchpad."""
    same = json.dumps(data, ensure_ascii=False, sort_keys=True)
    return any(
        e.get("op") == "memory.import" and json.dumps(e.get("data"), ensure_ascii=False, sort_keys=True) == same
        for e in journal_events(root=root)
    )


def _not_taken(summary: dict[str, Any]) -> list[dict[str, str]]:
    """Everything of the old project the migration did not turn into the book's data, and why."""
    rows = []
    for key, result in (summary.get("keys") or {}).items():
        if isinstance(result, dict) and result.get("status") == "kept":
            why = result.get("reason") or "本系统没有对应的数据：原样保存在 LegacyRecord（admin 可查）"
            rows.append(
                {
                    "what": f"state.json 的 {key}",
                    "why": why + ("；并留在瘦身后的 state.json" if result.get("also") else ""),
                }
            )
    memory = summary.get("memory") or {}
    if memory.get("error"):
        rows.append({"what": "memory_scratchpad.json", "why": memory["error"]})
    for item in memory.get("skipped") or []:
        rows.append({"what": f"memory_scratchpad.json 的 {item['item']}", "why": item["reason"]})
    for key in memory.get("kept") or []:
        rows.append({"what": f"memory_scratchpad.json 的 {key}", "why": "没有对应的记忆类别：原样保存在 LegacyRecord"})
    for line in (summary.get("book_files") or {}).get("skipped") or []:
        what, _, why = line.partition("：")
        rows.append({"what": what, "why": why or line})
    return rows


def _state_title(state: dict) -> str | None:
    """The book's title as the old state.json recorded it (project_info / project / progress / top)."""
    holders = [
        h for h in (state.get("project_info"), state.get("project"), state.get("progress")) if isinstance(h, dict)
    ]
    for holder in [*holders, {k: state.get(k) for k in ("title", "book_title")}]:
        for key in ("title", "book_title", "name"):
            value = holder.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def _book_files(*, root: Path, state: dict, slug: str, commit: bool) -> dict:
    """The old chapters and summaries converted into the book format (written only with ``commit``;
    the dry run lists what it would write)."""
    plan = legacy_chapters_plan(root=root)
    threads, threads_skipped = threads_plan(root=root, state=state)
    documents, documents_skipped = documents_plan(root=root)
    files = {**plan["files"], **threads, **documents}
    plan["skipped"] = plan["skipped"] + threads_skipped + documents_skipped
    book_yaml = legacy_book_yaml(root=root, slug=slug, title=_state_title(state) or slug)
    problems = []
    if book_yaml is not None:
        files = {"book.yaml": book_yaml, **files}
    else:
        try:
            existing = yaml.safe_load((root / "book.yaml").read_text(encoding="utf-8-sig")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            existing = {}
        declared = existing.get("slug", root.name) if isinstance(existing, dict) else root.name
        if str(declared) != slug:
            problems.append(
                f"book.yaml 的 slug 是 '{declared}'，迁移写入的书是 '{slug}'：rebuild 会建成另一本书，"
                f"请把 book.yaml 的 slug 改为 {slug}，或用 --book {declared} 重新迁移"
            )
    result: dict[str, Any] = {
        "chapters": plan["chapters"],
        "summaries": plan["summaries"],
        "threads": len(threads),
        "documents": sorted(documents),
        "written" if commit else "would_write": sorted(files),
        "skipped": plan["skipped"],
        "problems": problems,
    }
    if commit:
        legacy_files_write(root=root, files=files)
    if files:
        result["next"] = f"python manage.py rebuild {root}"
    return result
