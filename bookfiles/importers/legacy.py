"""The chapter files and summaries of an old project (the v5/v6 plugin) converted into the book format.

The old plugin kept chapters as ``正文/第0004章-标题.md`` (also ``第4章 标题.md``, ``第十二章.md``, in
volume sub-folders or not) and each chapter's summary apart, in ``.webnovel/summaries/ch0003.md``.
The book format wants ``定稿/正文/[第N卷/]第NNNN章.md`` with ``title`` and ``summary`` in the front
matter (docs/book-format.md), so a migrated folder rebuilds with its chapters. The old files are
never changed or deleted; a chapter file already in 定稿/正文/ is never overwritten.
"""

import re
from pathlib import Path
from typing import Any

import yaml

from bookfiles.parser.markup import FrontMatterError, front_matter_split, numeral_parse
from kernel.safefs import book_file_write

OLD_CHAPTERS = Path("正文")
SUMMARIES = Path(".webnovel") / "summaries"
TARGET = Path("定稿") / "正文"
_NUMERAL = "[0-9０-９零〇一二两三四五六七八九十百千万]+"
_CHAPTER_STEM = re.compile(rf"^第\s*({_NUMERAL})\s*章\s*[-_—·:：\s]*(.*)$")
_SUMMARY_STEM = re.compile(rf"^(?:ch(?:apter)?[-_]?|第)?\s*({_NUMERAL})\s*(?:章.*)?$", re.IGNORECASE)
_VOLUME_DIR = re.compile(rf"^第\s*({_NUMERAL})\s*卷")
_HEADING = re.compile(r"^#{1,3}\s+(.*)$")


def _yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, default_flow_style=False, width=1000)


def _summary_text(text: str) -> str:
    """The summary file's prose: its front matter's ``summary`` if it has one, else the text without
    its title heading."""
    try:
        front, _, body, _ = front_matter_split(text.lstrip("\ufeff"))
    except FrontMatterError:
        front, body = {}, text
    if isinstance(front.get("summary"), str) and front["summary"].strip():
        return front["summary"].strip()
    lines = body.strip().splitlines()
    if lines and _HEADING.match(lines[0]):
        lines = lines[1:]
    return "\n".join(lines).strip()


def legacy_summaries_read(root: Path) -> dict[int, str]:
    """Chapter number → summary, from ``.webnovel/summaries/`` (ch0003.md, ch3.md, 第3章.md)."""
    folder = root / SUMMARIES
    out: dict[int, str] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.md")):
        match = _SUMMARY_STEM.match(path.stem)
        number = numeral_parse(match.group(1)) if match else None
        if number is None:
            continue
        text = _summary_text(path.read_text(encoding="utf-8-sig", errors="replace"))
        if text:
            out[number] = text
    return out


def legacy_chapters_plan(*, root: Path) -> dict[str, Any]:
    """What converting the old chapters would write: {"files": {relative path: text}, "chapters",
    "summaries", "skipped": [reasons]} (pure: reads only)."""
    files: dict[str, str] = {}
    skipped: list[str] = []
    summaries = legacy_summaries_read(root)
    used_summaries = 0
    seen: dict[int, str] = {}
    source = root / OLD_CHAPTERS
    paths = (
        sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in (".md", ".txt")) if source.is_dir() else []
    )
    for path in paths:
        rel = path.relative_to(root).as_posix()
        match = _CHAPTER_STEM.match(path.stem)
        number = numeral_parse(match.group(1)) if match else None
        if number is None:
            skipped.append(f"{rel}：文件名不是 第N章[-标题]，未转换")
            continue
        if number in seen:
            skipped.append(f"{rel}：第{number}章已由 {seen[number]} 转换，未重复转换")
            continue
        seen[number] = rel
        volume = None
        for folder in path.relative_to(source).parts[:-1]:
            found = _VOLUME_DIR.match(folder)
            if found:
                volume = folder
        target = TARGET / volume / f"第{number:04d}章.md" if volume else TARGET / f"第{number:04d}章.md"
        if (root / target).exists():
            skipped.append(f"{target.as_posix()} 已存在，未覆盖（来自 {rel}）")
            continue
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        try:
            front, _, body, _ = front_matter_split(text)
        except FrontMatterError:
            front, body = {}, text
        title = match.group(2).strip()
        lines = body.lstrip("\n").splitlines()
        heading = _HEADING.match(lines[0]) if lines else None
        if heading:
            # the old chapter opened with its own "# 第4章 标题": the title moves to the front matter
            heading_title = _CHAPTER_STEM.match(heading.group(1).strip())
            title = title or (heading_title.group(2).strip() if heading_title else heading.group(1).strip())
            lines = lines[1:]
        meta = dict(front)
        if title and not meta.get("title"):
            meta["title"] = title
        if number in summaries and not meta.get("summary"):
            meta["summary"] = summaries[number]
            used_summaries += 1
        head = f"---\n{_yaml(meta)}---\n" if meta else ""
        files[target.as_posix()] = head + "\n".join(lines).strip("\n") + "\n"
    unused = sorted(set(summaries) - set(seen))
    if unused:
        skipped.append(f"{len(unused)} 个摘要没有对应的章节文件（第{'、'.join(map(str, unused[:10]))}章）")
    return {"files": files, "chapters": len(files), "summaries": used_summaries, "skipped": skipped}


def legacy_book_yaml(*, root: Path, slug: str, title: str) -> str | None:
    """A minimal book.yaml for a migrated folder that has none (None when it has one)."""
    if (root / "book.yaml").exists():
        return None
    return f"# 由 migrate_state 从旧项目迁移生成\n{_yaml({'slug': slug, 'title': title})}"


def legacy_files_write(*, root: Path, files: dict[str, str]) -> list[str]:
    """Write the planned files (atomic, inside ``root``); returns the written paths."""
    for relative, text in files.items():
        book_file_write(root=root, relative=relative, text=text)
    return list(files)
