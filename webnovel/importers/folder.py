"""Write a parsed plain-text novel (``webnovel.importers.txt.TxtBook``) as a book folder."""

import shutil
from pathlib import Path
from typing import Any

import yaml

from webnovel.exceptions import Conflict, InvalidInput
from webnovel.importers.txt import TxtBook, TxtChapter

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
    are replaced (all other folders — 设定, 线索, … — are left alone)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidInput(f"输出路径不是文件夹：{out_dir}", extra={"out_dir": str(out_dir)})
    if not folder_is_empty(out_dir):
        if not force:
            raise Conflict(f"输出文件夹非空：{out_dir}（加 --force 覆盖其中的 book.yaml 与 定稿/）", extra={})
        shutil.rmtree(out_dir / CHAPTERS_DIR, ignore_errors=True)
        (out_dir / PREFACE_PATH).unlink(missing_ok=True)
    with_volumes = bool(book.volumes)
    files: dict[Path, str] = {
        Path("book.yaml"): book_yaml_text(book=book, title=title, slug=slug, source=source, encoding=encoding)
    }
    for chapter in book.chapters:
        body = chapter.body + "\n" if chapter.body else ""
        files[chapter_relpath(chapter, with_volumes=with_volumes)] = (
            "---\n" + _yaml({"title": chapter.title}) + "---\n" + body
        )
    preface = preface_text(book=book)
    if preface:
        files[PREFACE_PATH] = preface
    for relpath, text in files.items():
        target = out_dir / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return [p.as_posix() for p in files]
