"""Walk a book folder, read and parse every file, and run the cross-file checks.

Written by hand rather than on python-frontmatter: the reader is the floor of every rebuild
benchmark, and one pass (read bytes → sha256 → decode → split → libyaml) keeps it lean.
"""

import hashlib
import os
import re
from collections import defaultdict
from pathlib import Path

from bookfiles.parser.files import file_kind, file_parse
from bookfiles.parser.markup import key_line
from bookfiles.parser.types import (
    DEFAULT_LIMITS,
    ERROR,
    WARNING,
    BookConfig,
    ChapterData,
    EntityData,
    FileResult,
    Issue,
    ParsedBook,
    ReadLimits,
    SourceInfo,
    VolumeData,
)
from kernel.safefs import OutsideRoot, regular_file_read

SKIPPED_DIRS = frozenset({"工作区"})


# Kinds ``book_files_list`` gives to entries it refuses to read; ``file_read`` turns them into error issues.
OUTSIDE = "outside_book"
BAD_NAME = "bad_name"
REFUSED_KINDS = frozenset({OUTSIDE, BAD_NAME})


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real + os.sep)


def printable_path(rel: str) -> str:
    """A relative path safe to store and print: each byte of a non-UTF-8 name is shown as ``\\xNN``."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _utf8(rel: str) -> bool:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# A name that is not UTF-8 cannot be matched against the patterns of book files (a GBK-encoded
# 第0025章.md has no 第 in it): any such Markdown or YAML file is reported rather than skipped unseen.
_BOOK_FILE_SUFFIXES = (".md", ".yaml", ".yml")
_ESCAPED = re.compile(r"((?:\\x[0-9a-f]{2})+)")


def book_files_list(
    root: Path, *, skip_top: frozenset[str] = frozenset(), limits: ReadLimits = DEFAULT_LIMITS
) -> list[tuple[str, str]]:
    """[(relative path, kind)] of every file the rebuilder reads, sorted by path. Skips dot entries,
    工作区/ and the top-level folders in ``skip_top``; never reads a file.

    Entries it refuses get a kind of ``REFUSED_KINDS``: a symlink (file or folder) resolving outside the
    book (not followed, unless ``limits.links_outside``), and a book file whose path is not
    valid UTF-8 (it could be neither stored nor named in a message)."""
    found: list[tuple[str, str]] = []
    root_str = str(root)
    skipped = SKIPPED_DIRS | skip_top
    prefix = len(os.path.join(root_str, ""))
    stack = [root_str]
    root_real = os.path.realpath(root_str)
    linked: set[str] = set()
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            rel = entry.path[prefix:].replace(os.sep, "/")
            try:
                is_dir = entry.is_dir()
                is_link = entry.is_symlink()
            except OSError:  # a link into /proc/1/cwd: even stat is refused
                found.append((printable_path(rel), OUTSIDE))
                continue
            if is_dir:
                if folder == root_str and name in skipped:
                    continue
                if is_link:
                    real = os.path.realpath(entry.path)
                    if _inside(real, root_real):
                        continue  # a link back into the book (or a cycle) would read files twice
                    if not limits.links_outside:
                        found.append((printable_path(rel), OUTSIDE))
                        continue
                    if real in linked:
                        continue
                    linked.add(real)
                stack.append(entry.path)
                continue
            kind = file_kind(rel)
            if not _utf8(rel):
                if kind is not None or name.endswith(_BOOK_FILE_SUFFIXES):
                    found.append((printable_path(rel), BAD_NAME))
                continue
            if kind is None:
                continue
            if is_link and not limits.links_outside and not _inside(os.path.realpath(entry.path), root_real):
                found.append((rel, OUTSIDE))
                continue
            found.append((rel, kind))
    found.sort()
    return found


def refused_issue(rel: str, kind: str) -> Issue:
    if kind == BAD_NAME:
        return _bad_name_issue(rel)
    return Issue(
        OUTSIDE,
        rel,
        None,
        "是指向书籍文件夹之外的符号链接，拒绝读取（确需如此请设置 WEBNOVEL_BOOK_LINKS_OUTSIDE=1）",
        ERROR,
    )


def _bad_name_issue(rel: str) -> Issue:
    """``bad_name`` for a path shown with ``printable_path``: an error for a chapter (anything under
    定稿/正文/) or a file whose name still reads as a book file's; a warning for another Markdown / YAML
    file, which may be a book file whose name a tool wrote in another encoding (GBK is tried, to say so)."""
    name = rel.rsplit("/", 1)[-1]
    pieces = _ESCAPED.split(name)
    raw = b"".join(bytes.fromhex(p.replace("\\x", "")) if i % 2 else p.encode() for i, p in enumerate(pieces))
    try:
        hint = f"（文件名按 GBK 解码为 {raw.decode('gbk')}）" if len(pieces) > 1 else ""
    except UnicodeDecodeError:
        hint = ""
    chapter = rel.startswith("定稿/正文/") or file_kind(rel) is not None
    message = f"文件名或其所在文件夹名不是 UTF-8 编码{hint}，无法读取（\\xNN 为无法解码的字节）：" + (
        "请改名为 UTF-8 后重试" if chapter else "已跳过；若是书籍文件，请改名为 UTF-8"
    )
    return Issue(BAD_NAME, rel, None, message, ERROR if chapter else WARNING)


def file_read(root: Path, rel: str, kind: str, *, limits: ReadLimits = DEFAULT_LIMITS) -> FileResult:
    """Read, hash and parse one file. A file that cannot be read or decoded gives an ``unreadable``
    error issue (and an empty hash) instead of raising; a refused entry (``REFUSED_KINDS``) its own."""
    if kind in REFUSED_KINDS:
        result = FileResult(info=SourceInfo(path=rel, kind=kind, sha256="", size=0))
        result.issues.append(refused_issue(rel, kind))
        return result
    try:
        data, mtime_ns = file_bytes_read(root / rel, root=root, limits=limits)
    except OutsideRoot as exc:
        result = FileResult(info=SourceInfo(path=rel, kind=kind, sha256="", size=0))
        result.issues.append(Issue(OUTSIDE, rel, None, exc.strerror, ERROR))
        return result
    except OSError as exc:
        result = FileResult(info=SourceInfo(path=rel, kind=kind, sha256="", size=0))
        result.issues.append(Issue("unreadable", rel, None, f"无法读取文件：{exc.strerror or exc}", ERROR))
        return result
    return file_bytes_parse(root, rel, kind, data, mtime_ns=mtime_ns)


def file_bytes_read(path: Path, *, root: Path | None = None, limits: ReadLimits = DEFAULT_LIMITS) -> tuple[bytes, int]:
    """The bytes of a regular file and its mtime, taken from the same open file. A file over
    ``limits.max_bytes``, a device, a FIFO or (with ``root``, unless ``limits.links_outside``) a path
    resolving outside ``root`` raises OSError before it is read: every caller already reports an
    OSError as an unreadable file, so a stray 5 GB file or ``/dev/zero`` fails clearly instead of
    exhausting memory or blocking."""
    return regular_file_read(path, max_bytes=limits.max_bytes, root=None if limits.links_outside else root)


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_bytes_parse(
    root: Path, rel: str, kind: str, data: bytes, *, sha256: str | None = None, mtime_ns: int | None = None
) -> FileResult:
    """Hash (unless given) and parse the bytes of one file."""
    info = SourceInfo(path=rel, kind=kind, sha256=sha256 or file_sha256(data), size=len(data), mtime_ns=mtime_ns)
    result = FileResult(info=info)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        result.issues.append(Issue("unreadable", rel, line, "文件不是 UTF-8 编码", ERROR))
        return result
    if "\x00" in text:
        # PostgreSQL text columns refuse NUL; SQLite would keep a body no other tool shows the same way
        line = text.count("\n", 0, text.index("\x00")) + 1
        result.issues.append(Issue("unreadable", rel, line, "文件含 NUL 字符（\\x00），不是文本文件", ERROR))
        return result
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return file_parse(result, text, folder_name=root.name)


def chapter_volume_resolve(chapter: ChapterData, volumes: list[VolumeData]) -> int | None:
    """Front matter ``volume:`` wins, then the volume folder, then the book.yaml range."""
    if chapter.volume is not None:
        return chapter.volume
    if chapter.folder_volume is not None:
        return chapter.folder_volume
    for volume in volumes:
        if volume.start_chapter is not None and volume.end_chapter is not None:
            if volume.start_chapter <= chapter.number <= volume.end_chapter:
                return volume.number
    return None


def results_collect(root: Path, results: list[FileResult], config: BookConfig | None) -> ParsedBook:
    book = ParsedBook(root=root, config=config or BookConfig(slug=root.name))
    for result in results:
        if result.info.kind not in REFUSED_KINDS:  # a name that cannot be stored is reported, not recorded
            book.files.append(result.info)
        book.issues.extend(result.issues)
        if result.chapter is not None:
            book.chapters.append(result.chapter)
        if result.thread is not None:
            book.threads.append(result.thread)
        if result.secret is not None:
            book.secrets.append(result.secret)
        book.entities.extend(result.entities)
        book.documents.extend(result.documents)
        book.timeline.extend(result.timeline)
    for chapter in book.chapters:
        chapter.volume = chapter_volume_resolve(chapter, book.config.volumes)
    book.chapters.sort(key=lambda c: (c.number, c.path))
    return book


def book_read(root: Path, *, limits: ReadLimits = DEFAULT_LIMITS) -> ParsedBook:
    """Read and parse every file of the book folder at ``root`` (docs/book-format.md). Pure: no
    database, no settings (``limits`` says how big a file may be, whether links may leave the folder).
    Returns the parsed book with its issues (errors and warnings)."""
    root = Path(root).resolve()
    results: list[FileResult] = []
    config: BookConfig | None = None
    missing_book_yaml = True
    for rel, kind in book_files_list(root, limits=limits):
        result = file_read(root, rel, kind, limits=limits)
        if kind == "book":
            missing_book_yaml = False
            config = result.config
        results.append(result)
    book = results_collect(root, results, config)
    if missing_book_yaml and not any(r.info.kind == "chapter" for r in results):
        # an empty or wrong folder must never become (or replace) a book with nothing in it
        book.issues.append(
            Issue(
                "not_a_book", ".", None, f"{root} 不是书籍文件夹：既没有 book.yaml，也没有 定稿/正文/ 下的章节", ERROR
            )
        )
    elif missing_book_yaml:
        book.issues.append(Issue("missing_file", "book.yaml", None, "书籍文件夹缺少 book.yaml，书名与分卷为空"))
    book.issues.extend(book_validate(book))
    return book


def _duplicates(items: list[tuple[object, str]], what: str) -> list[Issue]:
    seen: dict[object, str] = {}
    issues = []
    for key, path in items:
        if key in seen:
            issues.append(Issue("duplicate", path, None, f"{what} {key} 重复：{seen[key]} 与 {path}", ERROR))
        else:
            seen[key] = path
    return issues


def book_validate(book: ParsedBook) -> list[Issue]:
    """Cross-file checks: duplicates (errors), unknown threads, missing evidence chapters and alias
    conflicts (warnings)."""
    issues: list[Issue] = []
    issues += _duplicates([(c.number, c.path) for c in book.chapters], "章节号")
    issues += _duplicates(sorted((t.thread_id, t.path) for t in book.threads), "线索 id")
    issues += _duplicates(sorted((s.secret_id, s.path) for s in book.secrets), "信息差 id")
    issues += _duplicates(sorted(((d.kind, d.key), d.path) for d in book.documents), "文档")
    issues += _duplicates(sorted({(r.volume, r.path) for r in book.timeline}), "时间线卷号")  # two files for one volume
    chapters = {c.number for c in book.chapters}
    threads = {t.thread_id for t in book.threads}
    for chapter in book.chapters:
        issues += chapter_threads_check(chapter, threads)
    for thread in book.threads:
        for entry in thread.history:
            if entry.chapter is not None and entry.chapter not in chapters:
                issues.append(
                    Issue(
                        "missing_evidence_chapter",
                        thread.path,
                        entry.line,
                        f"{thread.thread_id} 履历引用的第{entry.chapter}章不存在",
                    )
                )
    issues += alias_conflicts_check(book.entities)
    issues += entity_ids_check(book.entities)
    return issues


def entity_ids_check(entities: list[EntityData]) -> list[Issue]:
    """Two entries with the same explicit ``id:`` are a duplicate (an error, like two chapter files)."""
    seen: dict[str, EntityData] = {}
    issues = []
    for entity in entities:
        if not entity.explicit_id:
            continue
        first = seen.setdefault(entity.explicit_id, entity)
        if first is not entity:
            issues.append(
                Issue(
                    "duplicate",
                    entity.path,
                    entity.line,
                    f"实体 id {entity.explicit_id} 重复：「{first.name}」（{first.path}）与「{entity.name}」（{entity.path}）",
                    ERROR,
                )
            )
    return issues


def chapter_threads_check(chapter: ChapterData, threads: set[str]) -> list[Issue]:
    issues = []
    for field in ("opens", "advances", "closes"):
        for thread_id in getattr(chapter, field):
            if thread_id not in threads:
                line = key_line(chapter.fm_text, field, needle=thread_id) or key_line(chapter.fm_text, field)
                issues.append(
                    Issue(
                        "unknown_thread",
                        chapter.path,
                        line,
                        f"第{chapter.number}章 {field} 引用的线索 {thread_id} 没有线索文件",
                    )
                )
    return issues


def alias_conflicts_check(entities: list[EntityData]) -> list[Issue]:
    """An alias claimed by two entities of the same type (an alias equal to another same-type
    entity's canonical name counts as a claim too)."""
    claims: dict[tuple[str, str], list[EntityData]] = defaultdict(list)
    names: dict[tuple[str, str], list[EntityData]] = defaultdict(list)
    for entity in entities:
        names[(entity.type, entity.name)].append(entity)
        # generic aliases (他, 老爷) are shared by design: their mentions are weak and never attributed
        for alias in {a.alias for a in entity.aliases if a.alias != entity.name and not a.generic}:
            claims[(entity.type, alias)].append(entity)
    issues = []
    for (type_name, alias), owners in claims.items():
        others = owners[1:] + [e for e in names.get((type_name, alias), []) if e not in owners]
        if not others:
            continue
        first = owners[0]
        for other in others:
            issues.append(
                Issue(
                    "alias_conflict",
                    other.path,
                    other.line,
                    f"别名「{alias}」同时属于{type_name}「{first.name}」（{first.path}）与「{other.name}」（{other.path}）",
                )
            )
    return issues
