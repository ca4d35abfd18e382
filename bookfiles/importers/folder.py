"""Write a parsed plain-text novel (``bookfiles.importers.txt.TxtBook``) as a book folder."""

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bookfiles.importers.txt import TxtBook, TxtChapter
from kernel.exceptions import Conflict, InvalidInput
from kernel.safefs import book_file_write, path_inside

PREFACE_PATH = Path("定稿") / "前言.md"
CHAPTERS_DIR = Path("定稿") / "正文"


class _Dumper(yaml.SafeDumper):
    """Block mappings, flow lists of scalars: ``chapters: [1, 12]`` as in docs/book-format.md."""


_Dumper.add_representer(
    list,
    lambda dumper, value: dumper.represent_sequence(
        "tag:yaml.org,2002:seq", value, flow_style=not any(isinstance(v, dict | list) for v in value)
    ),
)


def _yaml(data: dict[str, Any]) -> str:
    return yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, default_flow_style=False)


def chapter_relpath(chapter: TxtChapter, *, with_volumes: bool) -> Path:
    """定稿/正文/[第N卷/]第NNNN章.md"""
    name = f"第{chapter.number:04d}章.md"
    if with_volumes and chapter.volume is not None:
        return CHAPTERS_DIR / f"第{chapter.volume}卷" / name
    return CHAPTERS_DIR / name


def book_yaml_text(*, book: TxtBook, title: str, slug: str | None, source: str, encoding: str) -> str:
    config: dict[str, Any] = {}
    if slug:
        config["slug"] = slug
    config["title"] = title
    volumes = [v.as_dict() for v in book.volumes if v.chapters]
    if volumes:
        config["volumes"] = [{"number": v["number"], "name": v["name"], "chapters": v["chapters"]} for v in volumes]
    return f"# 由 import_txt 从 {source} 导入（编码 {encoding}）\n" + _yaml(config)


def preface_text(*, book: TxtBook) -> str:
    """定稿/前言.md: the text before the first chapter, then each volume's intro under its heading."""
    parts = [book.preface] if book.preface else []
    for volume in book.volumes:
        if volume.intro:
            parts.append(f"## 第{volume.number}卷 {volume.title}".rstrip() + "\n\n" + volume.intro)
    return "\n\n".join(parts) + "\n" if parts else ""


def folder_is_empty(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def txt_book_write(
    *, book: TxtBook, out_dir: Path, title: str, slug: str | None, source: str, encoding: str, force: bool = False
) -> list[str]:
    """Write book.yaml, the chapters and the preface into ``out_dir``; return the written paths.

    A non-empty ``out_dir`` is refused unless ``force``: then book.yaml, 定稿/正文/ and 定稿/前言.md
    are replaced (all other folders — 设定, 线索, … — are left alone). The chapters are written aside
    (a hidden folder in ``out_dir``) and swapped in by two renames once all are on disk, so a failure
    while writing (a full disk) leaves the previous 定稿/正文/ whole."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise InvalidInput(f"输出路径不是文件夹（或是符号链接）：{out_dir}", extra={"out_dir": str(out_dir)})
    if not folder_is_empty(out_dir) and not force:
        raise Conflict(f"输出文件夹非空：{out_dir}（加 --force 覆盖其中的 book.yaml 与 定稿/）", extra={})
    out_dir.mkdir(parents=True, exist_ok=True)
    for relative in (Path("book.yaml"), CHAPTERS_DIR, PREFACE_PATH):
        path_inside(root=out_dir, relative=relative)  # a symlink planted at any of them is refused up front
    with_volumes = bool(book.volumes)
    chapters: dict[Path, str] = {}
    for chapter in book.chapters:
        body = chapter.body + "\n" if chapter.body else ""
        chapters[chapter_relpath(chapter, with_volumes=with_volumes).relative_to(CHAPTERS_DIR)] = (
            "---\n" + _yaml({"title": chapter.title}) + "---\n" + body
        )
    stage = Path(tempfile.mkdtemp(prefix=".import-", dir=out_dir))
    try:
        try:
            for relpath, text in chapters.items():
                book_file_write(root=stage, relative=Path("正文") / relpath, text=text)
            (stage / "正文").mkdir(exist_ok=True)
            target = out_dir / CHAPTERS_DIR
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                os.rename(target, stage / "旧正文")
            os.rename(stage / "正文", target)
        except OSError as exc:
            raise InvalidInput(
                f"写入 {out_dir / CHAPTERS_DIR} 失败：{exc.strerror or exc}（原有章节未改动）",
                extra={"out_dir": str(out_dir)},
            ) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    files = [Path("book.yaml")] + [CHAPTERS_DIR / p for p in chapters]
    book_file_write(
        root=out_dir,
        relative="book.yaml",
        text=book_yaml_text(book=book, title=title, slug=slug, source=source, encoding=encoding),
    )
    preface = preface_text(book=book)
    if preface:
        book_file_write(root=out_dir, relative=PREFACE_PATH, text=preface)
        files.append(PREFACE_PATH)
    else:
        (out_dir / PREFACE_PATH).unlink(missing_ok=True)
    return [p.as_posix() for p in files]
