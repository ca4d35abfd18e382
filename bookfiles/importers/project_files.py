"""The rest of an old project's folder converted into the book format (issue 31), beside the chapters of
``legacy.py``: the state file's ``plot_threads`` become thread files, ``设定集/世界观.md`` becomes
``设定/世界观.md``, the outlines under ``大纲/`` go where the format reads them (总纲, 卷纲, 时间线). What has
no place in the format is listed with the reason, never dropped in silence. The old files stay; a file
already at its target is never overwritten.
"""

import re
from pathlib import Path
from typing import Any

import yaml

from bookfiles.parser.markup import numeral_parse

_NUMERAL = "[0-9０-９零〇一二两三四五六七八九十百千万]+"
_VOLUME = re.compile(rf"第\s*({_NUMERAL})\s*卷")
_TIMELINE_HEAD = re.compile(r"^\|\s*章\s*\|.*\|\s*$", re.M)
THREAD_TYPES = ("伏笔", "悬念", "感情线")
_STRENGTH = {"high": "高", "高": "高", "critical": "高", "urgent": "高", "medium": "中", "中": "中", "normal": "中",
             "low": "低", "低": "低"}  # fmt: skip
_CLOSED = {"resolved", "closed", "done", "paid", "paid_off", "已回收", "已收尾", "回收"}
_DROPPED = {"abandoned", "dropped", "cancelled", "已放弃", "放弃"}


def _yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, default_flow_style=False, width=1000)


def _first(item: dict, *keys: str) -> Any:
    for key in keys:
        if item.get(key) not in (None, "", [], {}):
            return item[key]
    return None


def _chapter(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value > 0 else None
    found = re.search(_NUMERAL, str(value or ""))
    return numeral_parse(found.group(0)) if found else None


def _thread_items(data: Any) -> list[tuple[str, Any]]:
    """(where, item) of every thread the old ``plot_threads`` holds: a list, {id: item}, or {bucket: list}."""
    if isinstance(data, list):
        return [(f"plot_threads[{i}]", item) for i, item in enumerate(data)]
    if not isinstance(data, dict):
        return []
    items: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, list):
            items += [(f"plot_threads.{key}[{i}]", item) for i, item in enumerate(value)]
        elif isinstance(value, dict):
            items.append((f"plot_threads.{key}", {"id": key, **value}))
    return items


def _thread_file(item: dict, thread_id: str, kind: str) -> str:
    title = str(_first(item, "title", "name", "content", "description", "summary") or thread_id)
    status_raw = str(item.get("status") or "").strip().lower()
    status = "已收尾" if status_raw in _CLOSED else "已放弃" if status_raw in _DROPPED else "进行"
    front: dict[str, Any] = {"id": thread_id, "title": title[:60]}
    front["strength"] = _STRENGTH.get(str(item.get("urgency") or item.get("strength") or "").strip().lower(), "中")
    front["status"] = status
    opened = _chapter(_first(item, "planted_chapter", "planted", "opened", "chapter", "created_chapter"))
    if opened:
        front["opened"] = opened
    target = _first(item, "target_chapter", "target", "payoff_chapter", "expected_chapter", "planned_end")
    if target is not None and _chapter(target):
        front["planned_end"] = str(target) if _VOLUME.search(str(target)) else _chapter(target)
    closed = _chapter(_first(item, "resolved_chapter", "closed_chapter", "payoff_at"))
    if status == "已收尾" and closed:
        front["closed"] = closed
    body = [f"## 描述\n{_first(item, 'content', 'description', 'title') or title}"]
    extra = {k: v for k, v in item.items() if k not in {"title", "name", "content", "description", "status"}}
    body.append(
        "## 迁移\n从旧项目 state.json 的 plot_threads 迁移，原始字段："
        + yaml.safe_dump(extra, allow_unicode=True, default_flow_style=True, width=1000).strip()
    )
    return f"---\n{_yaml(front)}---\n" + "\n\n".join(body) + "\n"


def threads_plan(*, root: Path, state: dict) -> tuple[dict[str, str], list[str]]:
    """Thread files (``线索/伏笔-NNN.md``) for the old ``plot_threads``; (files, what was not taken and why)."""
    files: dict[str, str] = {}
    skipped: list[str] = []
    numbers = dict.fromkeys(THREAD_TYPES, 0)
    existing = {p.name.split(" ")[0].removesuffix(".md") for p in (root / "线索").glob("*.md")}
    for where, item in _thread_items(state.get("plot_threads")):
        if not isinstance(item, dict):
            skipped.append(f"state.json {where}：不是对象，未转换为线索")
            continue
        kind = str(item.get("type") or "")
        kind = kind if kind in THREAD_TYPES else "伏笔"  # the old plot_threads are foreshadowing
        numbers[kind] += 1
        thread_id = f"{kind}-{numbers[kind]:03d}"
        while thread_id in existing:
            numbers[kind] += 1
            thread_id = f"{kind}-{numbers[kind]:03d}"
        files[f"线索/{thread_id}.md"] = _thread_file(item, thread_id, kind)
    return files, skipped


def _outline_target(rel: str, text: str) -> tuple[str | None, str]:
    """Where an old ``大纲/`` file goes in the format, or (None, why not)."""
    name = Path(rel).stem
    volume = _VOLUME.search(name)
    if rel == "大纲/总纲.md":
        return None, "已在本格式的位置（大纲/总纲.md），rebuild 直接读取"
    if "总纲" in name:
        return "大纲/总纲.md", ""
    if "时间线" in name:
        if volume is None:
            return (
                None,
                "时间线没有卷号：本格式按卷放在 时间线/第N卷.md（表头 | 章 | 书内时间 | 事件 | 在场人物 |），请按卷拆分",
            )
        if not _TIMELINE_HEAD.search(text):
            return (
                None,
                "不是「| 章 | 书内时间 | 事件 | 在场人物 |」表格：本格式的时间线读不了，请改写后放到 时间线/第N卷.md",
            )
        return f"时间线/第{numeral_parse(volume.group(1))}卷.md", ""
    if volume is not None:
        return f"大纲/卷纲/第{numeral_parse(volume.group(1))}卷.md", ""
    return None, "本格式只读 大纲/总纲.md、大纲/卷纲/第N卷.md、时间线/第N卷.md：文件名里没有「总纲」或卷号"


def documents_plan(*, root: Path) -> tuple[dict[str, str], list[str]]:
    """``设定集/世界观.md`` and the ``大纲/`` files in their format places; (files, not taken and why)."""
    files: dict[str, str] = {}
    skipped: list[str] = []
    old = root / "设定集"
    for path in sorted(old.rglob("*")) if old.is_dir() else []:
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel == "设定集/世界观.md":
            target = "设定/世界观.md"
        else:
            skipped.append(
                f"{rel}：设定集里只有 世界观.md 有对应格式（设定/世界观.md；角色卡为 设定/角色/<名>.md），未转换"
            )
            continue
        if (root / target).exists():
            skipped.append(f"{target} 已存在，未覆盖（来自 {rel}）")
            continue
        files[target] = path.read_text(encoding="utf-8-sig", errors="replace")
    outlines = root / "大纲"
    for path in sorted(outlines.rglob("*.md")) if outlines.is_dir() else []:
        rel = path.relative_to(root).as_posix()
        if rel.startswith("大纲/卷纲/"):
            continue  # already in the format
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        target, why = _outline_target(rel, text)
        if target is None:
            if not why.startswith("已在"):
                skipped.append(f"{rel}：{why}")
            continue
        if (root / target).exists() or target in files:
            skipped.append(f"{target} 已存在，未覆盖（来自 {rel}）")
            continue
        files[target] = text
    return files, skipped
