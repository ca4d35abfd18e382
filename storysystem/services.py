"""Writes of the story system: importing reference libraries, editing entries, building and
persisting a book's master setting and chapter overrides."""

import json
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.journal import journal_append, journal_lock
from core.models import Book
from kernel.exceptions import InvalidInput, NotFound
from kernel.safefs import book_file_write, path_inside, regular_file_read
from storysystem import csvio, markdown, selectors, storydict
from storysystem.models import LibraryState, ReferenceEntry, ReferenceLibrary, ReferenceTable, StorySetting

# The editable fields of a reference entry, in display order (the admin form uses them too).
ENTRY_FIELDS = [
    "position",
    "skills",
    "category",
    "level",
    "keywords",
    "intents",
    "genres",
    "instruction",
    "summary",
    "detail",
    "extra",
    "raw",
]


def library_touch() -> str:
    """Give the library a new version token: the search index rebuilds on its next use."""
    token = LibraryState.new_token()
    updated = LibraryState.objects.filter(pk=1).update(token=token)
    if not updated:
        LibraryState.objects.update_or_create(pk=1, defaults={"token": token})
    return token


@transaction.atomic
def references_import(*, directory: Path, library: str | None = None, dry_run: bool = False) -> dict[str, Any]:
    """Import every CSV of ``directory`` into library ``library`` (default: the folder name),
    idempotent by 编号: rows are created, updated or left unchanged, never duplicated. Any
    row-numbered error aborts the whole import (nothing is written)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise NotFound(f"目录不存在：{directory}", extra={"directory": str(directory)})
    parsed = csvio.folder_parse(directory)
    if not parsed:
        raise InvalidInput(f"目录 {directory} 中没有 CSV 文件", extra={"directory": str(directory)})
    errors = [e for t in parsed for e in t.errors]
    if errors:
        raise InvalidInput(f"导入失败：{len(errors)} 处错误；首个：{errors[0]}", extra={"errors": errors})
    name = library or directory.resolve().name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("资料库名称（目录名）不是 UTF-8 编码：请用 --library 指定", extra={}) from None
    if not name.strip() or len(name) > 100 or "\x00" in name:
        raise InvalidInput(f"资料库名称须为 1–100 个字符：{name[:120]!r}", extra={"library": name[:120]})
    lib, _ = ReferenceLibrary.objects.get_or_create(name=name)
    report: dict[str, Any] = {"library": name, "directory": str(directory), "dry_run": dry_run, "tables": {}}
    totals = {"created": 0, "updated": 0, "unchanged": 0}
    for pt in parsed:
        table, _ = ReferenceTable.objects.get_or_create(library=lib, name=pt.name)
        table.columns = pt.columns
        table.key_column = pt.key_column
        table.has_bom = pt.has_bom
        table.line_terminator = pt.line_terminator
        table.save()
        existing = {e.code: e for e in table.entries.all()}
        to_create, to_update = [], []
        counts = {"rows": len(pt.rows), "created": 0, "updated": 0, "unchanged": 0}
        for position, row in enumerate(pt.rows):
            values = {"position": position, **row.contract, "extra": row.extra, "raw": row.cells}
            for f in (
                "skills",
                "category",
                "level",
                "keywords",
                "intents",
                "genres",
                "instruction",
                "summary",
                "detail",
            ):
                values.setdefault(f, "")
            entry = existing.pop(row.code, None)
            if entry is None:
                to_create.append(ReferenceEntry(table=table, code=row.code, **values))
                counts["created"] += 1
            elif any(getattr(entry, k) != v for k, v in values.items()):
                for k, v in values.items():
                    setattr(entry, k, v)
                to_update.append(entry)
                counts["updated"] += 1
            else:
                counts["unchanged"] += 1
        ReferenceEntry.objects.bulk_create(to_create, batch_size=500)
        if to_update:
            now = timezone.now()
            for e in to_update:
                e.updated_at = now
            ReferenceEntry.objects.bulk_update(to_update, [*ENTRY_FIELDS, "updated_at"], batch_size=500)
        counts["not_in_file"] = len(existing)
        report["tables"][pt.name] = counts
        for k in totals:
            totals[k] += counts[k]
    report.update(totals)
    lib.source_dir = str(directory.resolve())
    lib.imported_at = timezone.now()
    lib.save()
    if dry_run:
        transaction.set_rollback(True)
    elif totals["created"] or totals["updated"]:
        library_touch()
    return report


def references_export(*, directory: Path, library: str) -> list[Path]:
    """Write every table of ``library`` as CSV into ``directory`` in the dialect it was read in."""
    lib = ReferenceLibrary.objects.filter(name=library).first()
    if lib is None:
        raise NotFound(f"资料库 '{library}' 不存在", extra={"library": library})
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        directory = directory.resolve()  # the folder the user named, as it resolves; links under it are refused
    except OSError as exc:
        raise InvalidInput(
            f"无法创建目录 {directory}：{exc.strerror or exc}", extra={"directory": str(directory)}
        ) from None
    written = []
    for table in lib.tables.all():
        written.append(book_file_write(root=directory, relative=f"{table.name}.csv", text=table_csv(table=table)))
    return written


def table_csv(*, table: ReferenceTable) -> bytes:
    """One table as CSV bytes: the raw row when it still matches the header, else rebuilt from fields."""
    rows = []
    for entry in table.entries.order_by("position", "code"):
        rows.append(entry_cells(entry=entry, table=table))
    return csvio.table_render(
        columns=table.columns, rows=rows, has_bom=table.has_bom, line_terminator=table.line_terminator
    )


def entry_cells(*, entry: ReferenceEntry, table: ReferenceTable) -> list[str]:
    if isinstance(entry.raw, list) and len(entry.raw) == len(table.columns):
        return [str(c) for c in entry.raw]
    return _cells_from_fields(entry=entry, table=table)


def _cells_from_fields(*, entry: ReferenceEntry, table: ReferenceTable) -> list[str]:
    contract = {f: getattr(entry, f) for f in csvio.CONTRACT_FIELDS.values() if f != "code"}
    return csvio.row_cells(
        columns=table.columns, key_column=table.key_column, code=entry.code, contract=contract, extra=entry.extra or {}
    )


@transaction.atomic
def entry_save(*, entry: ReferenceEntry) -> ReferenceEntry:
    """Save an edited entry (the admin's write path): keep ``raw`` in step with the fields so an
    export shows the edit, and invalidate the search index."""
    if not entry.code.strip():
        raise InvalidInput("编号不能为空", extra={"table": entry.table.name})
    if not isinstance(entry.extra, dict):
        raise InvalidInput(f"{entry.code}：extra 必须是「列名: 文本」的对象", extra={"code": entry.code})
    # cells are text: a number typed into the JSON widget is stored as its text, as a CSV would hold it
    entry.extra = {str(k): "" if v is None else str(v) for k, v in entry.extra.items()}
    entry.code = entry.code.strip()
    entry.raw = _cells_from_fields(entry=entry, table=entry.table)
    entry.save()
    library_touch()
    return entry


# ---------------------------------------------------------------- master and chapter settings

STORY_DIR = ".story-system"
GENERATED_MAX_BYTES = 64 * 1024 * 1024  # a generated setting is a few KB; a FIFO or /dev/zero planted there is refused


def _story_root(book: Book) -> Path:
    if not (book.root or "").strip():
        raise InvalidInput(
            f"《{book.title or book.slug}》没有书籍文件夹（root），无法写出 .story-system 文件",
            extra={"book": book.slug},
        )
    return Path(book.root)


def _json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def chapter_file_stem(number: int) -> str:
    return f"chapter_{number:03d}"


def _markdown_current(*, root: Path, relative: str) -> str | None:
    """The generated Markdown file as it is now (None when absent); a file that is not UTF-8 (cut short
    by a full disk, say) is a clear error, never a traceback."""
    path = path_inside(root=root, relative=relative)
    try:
        data, _mtime = regular_file_read(path, max_bytes=GENERATED_MAX_BYTES, root=root)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidInput(f"无法读取 {relative}：{exc.strerror or exc}", extra={"file": relative}) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInput(
            f"{relative} 第{line}行不是 UTF-8（文件可能被截断）：文件未改动；请修复或删除该文件后重试",
            extra={"file": relative, "line": line},
        ) from None


def story_files_write(*, book: Book) -> list[str]:
    """Write the book's master and every chapter setting to ``<book>/.story-system/`` (JSON whole,
    Markdown only inside the markers). Returns the paths written, relative to the book root.

    Every file's new content is computed first — a Markdown file with broken markers refuses the whole
    persist before anything is written — then each is written atomically through ``book_file_write``
    (no symlink, nothing outside the book folder, never a truncated file)."""
    return story_files_put(book=book, files=story_files_render(book=book))


def story_files_render(*, book: Book) -> list[tuple[str, str]]:
    """(relative path, new text) of every ``.story-system/`` file, nothing written: refuses (InvalidInput)
    a Markdown file with broken markers, one that is not UTF-8 or not a regular file, and a path with a
    symlink on the way — every refusal the write would meet, before anything is written or journaled."""
    root = _story_root(book)
    master = selectors.master_get(book=book)
    files: list[tuple[str, str]] = []

    def add(stem: str, data: dict[str, Any], title: str) -> None:
        md = f"{stem}.md"
        files.append((f"{stem}.json", _json_text(data)))
        current = _markdown_current(root=root, relative=md)
        files.append((md, markdown.block_merge(text=current, body=markdown.story_markdown(data), title=title, name=md)))

    add(f"{STORY_DIR}/MASTER_SETTING", master.data, f"《{book.title or book.slug}》故事系统总设定")
    for setting in StorySetting.objects.filter(book=book, chapter__isnull=False).order_by("chapter"):
        data = selectors.chapter_story(book=book, number=setting.chapter)
        add(
            f"{STORY_DIR}/chapters/{chapter_file_stem(setting.chapter)}",
            data,
            f"《{book.title or book.slug}》第{setting.chapter}章故事设定",
        )
    for relative, _ in files:
        path_inside(root=root, relative=relative)
    return files


def story_files_put(*, book: Book, files: list[tuple[str, str]]) -> list[str]:
    """Write what ``story_files_render`` computed, each file atomically; returns the paths written."""
    root = _story_root(book)
    for relative, text in files:
        book_file_write(root=root, relative=relative, text=text)
    return [relative for relative, _ in files]


def story_setting_build(
    *,
    book: Book,
    number: int | None,
    query: str,
    genre: str | None = None,
    overrides: dict[str, Any] | None = None,
    add_anti_patterns: list[str] | None = None,
    remove_anti_patterns: list[str] | None = None,
    persist: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """The master setting (``number`` None) or chapter ``number``'s, as every write door builds it (REST,
    the MCP tool, the admin). Returns (the dict, files written)."""
    common = {"book": book, "query": query, "genre": genre, "overrides": overrides, "persist": persist}
    if number is None:
        if remove_anti_patterns:
            raise InvalidInput("remove_anti_patterns 只适用于章节（且总被拒绝）；总设定请直接重建")
        return story_master_build(add_anti_patterns=add_anti_patterns, **common)
    return story_chapter_build(
        number=number, add_anti_patterns=add_anti_patterns, remove_anti_patterns=remove_anti_patterns, **common
    )


@transaction.atomic
def story_master_build(
    *,
    book: Book,
    query: str,
    genre: str | None = None,
    overrides: dict[str, Any] | None = None,
    add_anti_patterns: list[str] | None = None,
    persist: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """Build the book's master StorySystemDict; with ``persist`` store it (replacing the previous
    master) and write the .story-system files. Returns (the dict, files written)."""
    data = storydict.story_system_build(
        query=query, genre=genre, book=book, overrides=overrides, add_anti_patterns=add_anti_patterns
    )
    if not persist:
        return data, []
    files = _setting_persist(
        book=book,
        number=None,
        query=query,
        explicit_genre=genre or "",
        overrides=storydict.overrides_clean(overrides=overrides),
        added_anti_patterns=list(add_anti_patterns or []),
        data=data,
    )
    return data, files


@transaction.atomic
def story_chapter_build(
    *,
    book: Book,
    number: int,
    query: str,
    genre: str | None = None,
    overrides: dict[str, Any] | None = None,
    add_anti_patterns: list[str] | None = None,
    remove_anti_patterns: list[str] | None = None,
    persist: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """Build chapter ``number``'s setting on top of the master. A chapter may refine: a locked
    field it tries to change, or an anti-pattern it tries to remove, is refused (InvalidInput)."""
    if number < 1:
        raise InvalidInput(f"章号必须为正整数（收到 {number}）", extra={"chapter": number})
    master = selectors.master_get(book=book).data
    policy = storydict.override_policy_for(book=book)
    explicit = storydict.overrides_clean(overrides=overrides)
    for name, value in explicit.items():
        master_value = master["master_constraints"].get(name)
        if name in policy["locked"] and value != master_value:
            raise InvalidInput(
                f"第{number}章不能修改锁定字段「{name}」：锁定字段只认总设定"
                f"（总设定：{_show(master_value)}；本章请求：{_show(value)}）。如需修改，请重建总设定。",
                extra={"field": name, "policy": "locked", "master": master_value, "requested": value},
            )
    removals = [t for t in (remove_anti_patterns or []) if t.strip()]
    if removals:
        raise InvalidInput(
            f"第{number}章不能删除毒点：章节只能追加毒点，不能删除总设定的毒点（请求删除：{'、'.join(removals)}）",
            extra={"field": "anti_patterns", "policy": "append_only", "requested_removal": removals},
        )
    contributions, route, trace = storydict.chapter_contributions(
        master=master, policy=policy, query=query, genre=genre, explicit=explicit, add_anti_patterns=add_anti_patterns
    )
    record = {
        "meta": {
            "query": query,
            "explicit_genre": genre or None,
            "inferred_genre": route["genre"],
            "chapter": number,
            "generated_at": timezone.now().isoformat(timespec="seconds"),
        },
        "route": route,
        "contributions": contributions,
        "source_trace": trace,
    }
    if not persist:
        return storydict.chapter_compose(book=book, number=number, master=master, record=record, policy=policy), []
    files = _setting_persist(
        book=book,
        number=number,
        query=query,
        explicit_genre=genre or "",
        overrides=explicit,
        added_anti_patterns=list(add_anti_patterns or []),
        data=record,
    )
    return selectors.chapter_story(book=book, number=number), files


def story_setting_save(
    *,
    book: Book,
    number: int | None,
    query: str,
    explicit_genre: str,
    overrides: dict[str, Any],
    added_anti_patterns: list[str],
    data: dict[str, Any],
) -> StorySetting:
    """Store the master (``number`` None) or a chapter's setting as built — the row a persisting build
    writes and the journal's ``story.setting.save`` gives back on a rebuild (the built dict itself, so a
    library changed since does not change what the book had)."""
    setting, _ = StorySetting.objects.update_or_create(
        book=book,
        chapter=number,
        defaults={
            "query": query,
            "explicit_genre": explicit_genre,
            "overrides": overrides,
            "added_anti_patterns": added_anti_patterns,
            "data": data,
        },
    )
    return setting


def _setting_persist(*, book: Book, number: int | None, data: dict[str, Any], **fields: Any) -> list[str]:
    """Store a built setting, journal it (``story.setting.save``, the built dict as its attachment: a
    setting is a write no author's file holds), then write its ``.story-system/`` rendering (not read
    back). Returns the files written."""
    journal_lock(book=book)
    story_setting_save(book=book, number=number, data=data, **fields)
    # The journal before the files: a journal that refuses the write (another book's log, an event too
    # large, a log that is not a file) leaves no rendering of a setting the book does not have. What
    # could refuse the files (markers, symlinks) is checked before either is written.
    files = story_files_render(book=book)
    stem = "MASTER_SETTING" if number is None else chapter_file_stem(number)
    journal_append(book=book, op="story.setting.save", attachment=(f"story/{stem}", data), chapter=number, **fields)
    return story_files_put(book=book, files=files)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "、".join(value) or "（空）"
    return value or "（空）"
