"""Partial updates: ``chapter_finalize`` (one chapter plus changed non-chapter files) and
``book_sync`` (every file whose sha256 differs from SourceFile). Both end in ``changes_apply``,
which replaces only the rows of the files involved and leaves the database as a full rebuild
would (entities are re-derived from all entity files whenever one of them changed)."""

import os
from pathlib import Path, PurePosixPath
from typing import Any

from django.db import transaction

from bookfiles.conf import read_limits
from bookfiles.parser import (
    ERROR,
    FileResult,
    Issue,
    VolumeData,
    alias_conflicts_check,
    book_files_list,
    chapter_threads_check,
    chapter_volume_resolve,
    entity_ids_check,
    file_bytes_parse,
    file_bytes_read,
    file_read,
    file_sha256,
)
from bookfiles.parser.files import CHAPTER_NAME, VOLUME_NAME
from bookfiles.parser.markup import numeral_parse
from bookfiles.parser.reader import REFUSED_KINDS, refused_issue
from bookfiles.rebuilder import file_rows
from bookfiles.rebuilder.file_rows import DOCUMENT_KINDS
from bookfiles.rebuilder.journal_replay import journal_replay
from bookfiles.rebuilder.rebuild import book_rebuild
from core import writers as core_writers
from core.followups import follow_ups_complete
from core.models import Book, Chapter, Document, SourceFile, TimelineRow, Volume
from kernel.exceptions import Conflict, NotFound
from kernel.indexing import (
    after_chapter_hooks_schedule,
    canon_change_reporters_begin,
    canon_change_reporters_finish,
    chapter_indexers_run,
)
from kernel.safefs import OutsideRoot
from threads.models import Secret, Thread, ThreadHistoryEntry

ENTITY_KINDS = ("character_card", "roster")
NON_CHAPTER_KINDS = ("book", "thread", "secret", "roster", "timeline", *DOCUMENT_KINDS)


def _report(book: Book) -> dict[str, Any]:
    return {
        "book": book.slug,
        "title": book.title,  # messages name a book by its title
        "ok": True,
        "errors": [],
        "warnings": [],
        "added": [],
        "changed": [],
        "removed": [],
        "unreadable": [],
        "rebuilt": False,
        "chapters": {"updated": [], "removed": []},
        "rows": {},
    }


def _root(book: Book) -> Path:
    root = Path(book.root)
    if not root.is_dir():
        raise NotFound(
            f"《{book.title or book.slug}》的书籍文件夹不存在：{root}", extra={"book": book.slug, "root": str(root)}
        )
    return root


def _rebuild_instead(book: Book, root: Path, report: dict[str, Any], *, replace: bool = False) -> dict[str, Any]:
    """book.yaml changed: rebuild the whole book, unless its slug changed (a rebuild would then
    create a second book and leave this one, with its curated data, behind)."""
    config = (
        file_read(root, "book.yaml", "book", limits=read_limits()).config if (root / "book.yaml").is_file() else None
    )
    slug = config.slug if config is not None else root.name
    if slug != book.slug:
        report["ok"] = False
        report["errors"] = [
            Issue(
                "slug_changed",
                "book.yaml",
                None,
                f"book.yaml 的 slug 由 {book.slug} 变为 {slug}：同步不会改名，请改回，或用 rebuild 建立新书",
                ERROR,
            ).as_dict()
        ]
        return report
    full = book_rebuild(root=root, replace=replace)
    for key in ("added", "changed", "removed", "unreadable"):
        full[key] = report[key]
    full["rebuilt"] = True
    return full


def chapter_path_find(*, book: Book, root: Path, number: int) -> str:
    """The chapter file of ``number``: its recorded path when still there; else, for a new chapter,
    ``第NNNN章.md`` in the folder of the chapter before or after it or directly under 定稿/正文/ when
    exactly one of those exists (a few stat calls, whatever the book's length); else found by name
    under 定稿/正文/ (a walk over names only: no other chapter file is read), which also reports two
    files claiming the number."""
    recorded = Chapter.objects.filter(book=book, number=number).order_by().values_list("source_path", flat=True).first()
    if recorded and (root / recorded).is_file():
        return recorded
    base = root / "定稿" / "正文"
    name = f"第{number:04d}章.md"
    neighbours = (
        Chapter.objects.filter(book=book, number__in=[number - 1, number + 1])
        .order_by("number")
        .values_list("source_path", flat=True)
    )
    guesses = {os.path.relpath(base / name, root).replace(os.sep, "/")}
    guesses |= {str(PurePosixPath(path).parent / name) for path in neighbours if path}
    found = sorted(g for g in guesses if (root / g).is_file())
    if len(found) == 1:
        return found[0]
    matches = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            match = CHAPTER_NAME.match(name)
            if match and numeral_parse(match.group(1)) == number:
                matches.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    if not matches:
        raise NotFound(
            f"第{number}章的文件不存在：应为 定稿/正文/**/第{number:04d}章.md",
            extra={"book": book.slug, "chapter": number},
        )
    if len(matches) > 1:
        raise Conflict(
            f"第{number}章有多个文件：{'、'.join(sorted(matches))}", extra={"chapter": number, "files": sorted(matches)}
        )
    return matches[0]


def _scan(
    root: Path,
    listing: list[tuple[str, str]],
    stored: dict[str, tuple[str, int, int | None]],
    report: dict[str, Any],
    *,
    trust_stat: bool,
) -> tuple[list[FileResult], dict[str, int]]:
    """Hash the listed files and parse only those whose hash differs from ``stored`` (path → hash,
    size, mtime). With ``trust_stat``, a file whose size and mtime are unchanged is not even read.
    A file that vanished or cannot be read/decoded is reported and skipped (its previous rows stay).
    Also returns {path: mtime} of unchanged files whose mtime moved (touched, checked out)."""
    results, touched = [], {}
    for rel, kind in listing:
        previous = stored.get(rel)
        if kind in REFUSED_KINDS:
            report["unreadable"].append({"file": rel, "code": kind, "message": refused_issue(rel, kind).message})
            continue
        if trust_stat and previous is not None and previous[2] is not None:
            try:
                stat = os.stat(os.path.join(root, rel))
            except OSError:
                stat = None
            if stat is not None and (stat.st_size, stat.st_mtime_ns) == (previous[1], previous[2]):
                continue
        try:
            data, mtime_ns = file_bytes_read(root / rel, root=root, limits=read_limits())
        except OutsideRoot as exc:
            report["unreadable"].append({"file": rel, "code": "outside_book", "message": exc.strerror})
            continue
        except OSError as exc:
            report["unreadable"].append(
                {"file": rel, "code": "unreadable", "message": f"无法读取：{exc.strerror or exc}"}
            )
            continue
        sha = file_sha256(data)
        if previous is not None and previous[0] == sha:
            if previous[2] != mtime_ns:
                touched[rel] = mtime_ns
            continue
        result = file_bytes_parse(root, rel, kind, data, sha256=sha, mtime_ns=mtime_ns)
        bad = [i for i in result.issues if i.code == "unreadable"]
        if bad:
            report["unreadable"].append({"file": rel, "code": "unreadable", "message": bad[0].message})
            continue
        report["changed" if previous is not None else "added"].append(rel)
        results.append(result)
    return results, touched


def _stored(book: Book, **filters: Any) -> dict[str, tuple[str, int, int | None]]:
    rows_ = (
        SourceFile.objects.filter(book=book, **filters)
        .order_by()
        .values_list("path", "content_hash", "size", "mtime_ns")
    )
    return {path: (sha, size, mtime) for path, sha, size, mtime in rows_}


def stored_kinds(book: Book) -> list[str]:
    return list(SourceFile.objects.filter(book=book).order_by().values_list("kind", flat=True))


def chapter_finalize(*, book: Book, number: int) -> dict[str, Any]:
    """Re-read chapter ``number`` and every non-chapter file whose hash changed, and update only
    their rows. Cost does not grow with the number of chapters (other chapter files are not read)."""
    root = _root(book)
    report = _report(book)
    rel = chapter_path_find(book=book, root=root, number=number)
    chapter = file_read(root, rel, "chapter", limits=read_limits())
    stored = _stored(book, kind__in=NON_CHAPTER_KINDS)
    previous_hash = (
        SourceFile.objects.filter(book=book, path=rel).order_by().values_list("content_hash", flat=True).first()
    )
    if previous_hash is None:
        report["added"].append(rel)
    elif previous_hash != chapter.info.sha256:
        report["changed"].append(rel)
    else:
        report["unchanged"] = [rel]
    listing = book_files_list(root, skip_top=frozenset({"定稿"}), limits=read_limits())
    scanned, touched = _scan(root, listing, stored, report, trust_stat=True)
    results = [chapter, *scanned]
    present = {p for p, _ in listing}
    unreadable = {u["file"] for u in report["unreadable"]}
    removed = [
        (p, k)
        for p, k in SourceFile.objects.filter(book=book, path__in=set(stored) - present)
        .order_by()
        .values_list("path", "kind")
    ]
    report["removed"] = sorted(p for p, _ in removed if p not in unreadable)
    if "book.yaml" in report["added"] + report["changed"] + report["removed"]:
        return _rebuild_instead(book, root, report)
    changes_apply(book=book, root=root, results=results, removed=removed, listing=listing, report=report, full=False)
    if report["ok"]:
        core_writers.source_files_touch(book=book, touched=touched)
    return report


def book_files_reread(*, book: Book, paths: list[str], rescan: bool = False) -> dict[str, Any]:
    """Re-read the non-chapter files ``paths`` (a service just wrote them: a confirmed discovery's roster
    entry) and update their rows as a sync would, inside the caller's transaction (registered into
    ``core.lazybuild``; the other files are left to the next sync). The caller rescans the chapters its
    new names reach; ``rescan`` (a heal, which knows no names) has every chapter indexed again, as a sync
    whose entity files changed does."""
    root = _root(book)
    report = _report(book)
    listing = book_files_list(root, skip_top=frozenset({"定稿"}), limits=read_limits())
    wanted = set(paths)
    stored = _stored(book, kind__in=NON_CHAPTER_KINDS)
    results, _ = _scan(root, [(p, k) for p, k in listing if p in wanted], stored, report, trust_stat=False)
    if results:
        # the continuity check's canon-change report (every chapter the new name reaches, checked twice:
        # half a discovery confirm's time on 300 chapters) is for a sync's reader; here no one reads it
        changes_apply(
            book=book,
            root=root,
            results=results,
            removed=[],
            listing=listing,
            report=report,
            full=False,
            canon_report=False,
        )
        if rescan:
            report["indexers"] = chapter_indexers_run(book=book, numbers=None, removed=[], warnings=report["warnings"])
            report["hooks"] = after_chapter_hooks_schedule(book=book, numbers=None, removed=[], report=report)
    return report


def book_sync(*, book: Book, replace: bool = False) -> dict[str, Any]:
    """Re-read only the files whose sha256 differs from SourceFile (and new ones), drop the rows of
    deleted files; a changed book.yaml means a full rebuild. Unreadable files are reported and skipped.
    A sync that would drop more than half of the book's chapters (an emptied or unmounted folder) is
    refused with a ``would_delete`` error unless ``replace``. First, the follow-ups a killed writer left
    (``core.followups``) are completed."""
    follow_ups_complete(book=book)
    root = _root(book)
    report = _report(book)
    listing = book_files_list(root, limits=read_limits())
    stored = _stored(book)
    results, touched = _scan(root, listing, stored, report, trust_stat=False)
    present = {p for p, _ in listing}
    removed = sorted(
        SourceFile.objects.filter(book=book, path__in=set(stored) - present).order_by().values_list("path", "kind")
    )
    report["removed"] = [p for p, _ in removed]
    gone = [p for p, kind in removed if kind == "chapter"]
    before = sum(1 for kind in stored_kinds(book) if kind == "chapter")
    if not replace and len(gone) * 2 > before > 0:
        report["ok"] = False
        report["errors"] = [
            Issue(
                "would_delete",
                ".",
                None,
                f"拒绝同步：将删除 {len(gone)}/{before} 章，超过一半（{'、'.join(gone[:5])}"
                f"{' 等' if len(gone) > 5 else ''}）；文件夹 {root} 是否被清空或未挂载？确认删除请加 --replace",
                ERROR,
            ).as_dict()
        ]
        return report
    if "book.yaml" in report["added"] + report["changed"] + report["removed"]:
        return _rebuild_instead(book, root, report, replace=replace)
    changes_apply(book=book, root=root, results=results, removed=removed, listing=listing, report=report, full=True)
    if report["ok"]:
        core_writers.source_files_touch(book=book, touched=touched)
    return report


def _duplicate(path: str, message: str) -> Issue:
    return Issue("duplicate", path, None, message, ERROR)


def _duplicates_find(*, book: Book, batch: "_Batch") -> list[Issue]:
    """Duplicates among the new files, and against the rows of files that are not being replaced."""
    issues: list[Issue] = []
    seen: dict[int, str] = {}
    for c in batch.chapters:
        if c.number in seen:
            issues.append(_duplicate(c.path, f"章节号 {c.number} 重复：{seen[c.number]} 与 {c.path}"))
        seen[c.number] = c.path
    for number, path in (
        Chapter.objects.filter(book=book, number__in=list(seen))
        .exclude(source_path__in=batch.paths("chapter"))
        .order_by()
        .values_list("number", "source_path")
    ):
        issues.append(_duplicate(seen[number], f"章节号 {number} 重复：{path} 与 {seen[number]}"))
    for model, key, items, kind, what in (
        (Thread, "thread_id", batch.threads, "thread", "线索 id"),
        (Secret, "secret_id", batch.secrets, "secret", "信息差 id"),
    ):
        mine: dict[str, str] = {}
        for item in items:
            value = getattr(item, key)
            if value in mine:
                issues.append(_duplicate(item.path, f"{what} {value} 重复：{mine[value]} 与 {item.path}"))
            mine[value] = item.path
        for value, path in (
            model.objects.filter(book=book, **{f"{key}__in": list(mine)})
            .exclude(source_path__in=batch.paths(kind))
            .order_by()
            .values_list(key, "source_path")
        ):
            issues.append(_duplicate(mine[value], f"{what} {value} 重复：{path} 与 {mine[value]}"))
    doc_keys = {(d.kind, d.key): d.path for d in batch.documents}
    for kind, key, path in (
        Document.objects.filter(book=book, kind__in={k for k, _ in doc_keys}, key__in={k for _, k in doc_keys})
        .exclude(source_path__in=batch.paths(*DOCUMENT_KINDS))
        .order_by()
        .values_list("kind", "key", "source_path")
    ):
        if (kind, key) in doc_keys:
            new = doc_keys[(kind, key)]
            issues.append(_duplicate(new, f"文档 {kind}:{key} 重复：{path} 与 {new}"))
    volumes = {t.volume: t.path for t in batch.timeline}
    for volume, path in (
        TimelineRow.objects.filter(book=book, volume__in=list(volumes))
        .exclude(source_path__in=batch.paths("timeline"))
        .order_by()
        .values_list("volume", "source_path")
        .distinct()
    ):
        issues.append(_duplicate(volumes[volume], f"时间线卷号 {volume} 重复：{path} 与 {volumes[volume]}"))
    return issues


class _Batch:
    """The parsed contents of the changed files, and the paths of changed + removed files by kind."""

    def __init__(self, results: list[FileResult], removed: list[tuple[str, str]]) -> None:
        self.results = results
        self.removed = removed
        self.by_kind = file_rows.group_by_kind([(r.info.path, r.info.kind) for r in results] + list(removed))
        self.chapters = [r.chapter for r in results if r.chapter is not None]
        self.threads = [r.thread for r in results if r.thread is not None]
        self.secrets = [r.secret for r in results if r.secret is not None]
        self.documents = [d for r in results for d in r.documents]
        self.timeline = [t for r in results for t in r.timeline]

    def paths(self, *kinds: str) -> list[str]:
        return [p for kind in kinds for p in self.by_kind.get(kind, [])]


def _volumes_update(*, book: Book, root: Path, batch: "_Batch", full: bool, known: list[VolumeData]) -> int:
    """sync (``full``): re-derive volume rows from book.yaml and every chapter, as a rebuild does;
    finalize: only add the volume a new chapter names, if it is missing."""
    if not full:
        numbers = {v.number for v in known}
        extra = file_rows.volumes_merge(
            [],
            (
                (c.number, c.volume, c.folder_volume_name if c.folder_volume == c.volume else "")
                for c in batch.chapters
                if c.volume not in numbers
            ),
        )
        return core_writers.volumes_add(book=book, volumes=extra)
    config = (
        file_read(root, "book.yaml", "book", limits=read_limits()).config if (root / "book.yaml").is_file() else None
    )
    merged = file_rows.volumes_merge(
        config.volumes if config else [],
        (
            (number, volume, _folder_name(path, volume))
            for number, volume, path in Chapter.objects.filter(book=book)
            .order_by("number")
            .values_list("number", "volume", "source_path")
        ),
    )
    current = [
        (v.number, v.name, v.start_chapter, v.end_chapter) for v in Volume.objects.filter(book=book).order_by("number")
    ]
    if current == [(v.number, v.name, v.start_chapter, v.end_chapter) for v in merged]:
        return 0
    return core_writers.volumes_replace(book=book, volumes=merged)


def _references_check(
    *, book: Book, batch: "_Batch", gone_threads: set[str], new_numbers: set[int], removed_numbers: list[int]
) -> list[Issue]:
    """unknown_thread / missing_evidence_chapter, scoped to what changed. Only when a thread file
    went away are all chapters' thread references read (narrow columns, no bodies)."""
    issues: list[Issue] = []
    referenced = {t for c in batch.chapters for t in (*c.opens, *c.advances, *c.closes)}
    existing_threads = set(
        Thread.objects.filter(book=book, thread_id__in=referenced).order_by().values_list("thread_id", flat=True)
    )
    for c in batch.chapters:
        issues += chapter_threads_check(c, existing_threads)
    if gone_threads:
        for number, path, opens, advances, closes in (
            Chapter.objects.filter(book=book)
            .exclude(number__in=new_numbers)
            .order_by("number")
            .values_list("number", "source_path", "opens", "advances", "closes")
        ):
            for thread_id in sorted(gone_threads & {*opens, *advances, *closes}):
                issues.append(Issue("unknown_thread", path, None, f"第{number}章引用的线索 {thread_id} 的文件已删除"))
    cited = {h.chapter for t in batch.threads for h in t.history if h.chapter is not None}
    existing = set(Chapter.objects.filter(book=book, number__in=cited).order_by().values_list("number", flat=True))
    for t in batch.threads:
        for h in t.history:
            if h.chapter is not None and h.chapter not in existing:
                issues.append(
                    Issue("missing_evidence_chapter", t.path, h.line, f"{t.thread_id} 履历引用的第{h.chapter}章不存在")
                )
    if removed_numbers:
        for thread_id, path, chapter in (
            ThreadHistoryEntry.objects.filter(thread__book=book, chapter__in=removed_numbers)
            .exclude(thread__source_path__in=batch.paths("thread"))  # re-read threads were checked above
            .order_by("thread__thread_id", "order")
            .values_list("thread__thread_id", "thread__source_path", "chapter")
        ):
            issues.append(Issue("missing_evidence_chapter", path, None, f"{thread_id} 履历引用的第{chapter}章已删除"))
    return issues


@transaction.atomic
def changes_apply(
    *,
    book: Book,
    root: Path,
    results: list[FileResult],
    removed: list[tuple[str, str]],
    listing: list[tuple[str, str]],
    report: dict[str, Any],
    full: bool,
    canon_report: bool = True,
) -> None:
    """Replace the rows of the changed / removed files. ``full`` (sync) also re-derives volumes and
    re-checks thread references across all chapters; finalize keeps to the rows it touched.
    ``canon_report=False``: no canon-change report (a service's own re-read, whose report no one reads)."""
    book = core_writers.book_lock(slug=book.slug, defaults={"root": str(root)})
    batch = _Batch(results, removed)
    issues: list[Issue] = [i for r in results for i in r.issues]
    issues += _duplicates_find(book=book, batch=batch)
    # entities: re-derived from every entity file as soon as one changed (ids depend on file order)
    entities_changed = bool(batch.paths(*ENTITY_KINDS))
    entities: list = []
    if entities_changed:
        fresh = {r.info.path: r for r in results if r.info.kind in ENTITY_KINDS}
        gone = {p for p, _ in removed}
        entity_results = [
            fresh[p] if p in fresh else file_read(root, p, k, limits=read_limits())
            for p, k in listing
            if k in ENTITY_KINDS and p not in gone
        ]
        issues += [i for r in entity_results if r.info.path not in fresh for i in r.issues if i.level == ERROR]
        entities = [e for r in _entity_order(entity_results) for e in r.entities]
        issues += alias_conflicts_check(entities) + entity_ids_check(entities)
    # issue 27: the timeline's declared changes, re-derived from every timeline file when one changed or
    # an entity file did (a row's name resolves to the roster's entities), in the rebuild's file order
    timeline_changes = None
    if entities_changed or batch.paths("timeline"):
        fresh_timelines = {r.info.path: r for r in results if r.info.kind == "timeline"}
        gone_paths = {p for p, _ in removed}
        timeline_changes = file_rows.timeline_changes_of(
            row
            for p, k in listing
            if k == "timeline" and p not in gone_paths
            for row in (fresh_timelines.get(p) or file_read(root, p, k, limits=read_limits())).timeline
        )
    if any(i.level == ERROR for i in issues):
        report["ok"] = False
        report["errors"] = [i.as_dict() for i in issues if i.level == ERROR]
        report["warnings"] = [i.as_dict() for i in issues if i.level != ERROR]
        return

    # what a canon-change reporter (the continuity check) needs of the canon before the write
    reporters = (
        canon_change_reporters_begin(
            book=book,
            numbers=sorted({c.number for c in batch.chapters}),
            paths=[r.info.path for r in results] + [p for p, _ in removed],
        )
        if canon_report
        else []
    )
    counts = report["rows"]
    known_volumes = [
        VolumeData(v.number, v.name, v.start_chapter, v.end_chapter) for v in Volume.objects.filter(book=book)
    ]
    for c in batch.chapters:
        c.volume = chapter_volume_resolve(c, known_volumes)
    thread_paths = batch.paths("thread")
    old_thread_ids = set(
        Thread.objects.filter(book=book, source_path__in=thread_paths).order_by().values_list("thread_id", flat=True)
    )
    written = file_rows.file_rows_write(
        book=book,
        rows=file_rows.FileRows(
            chapters=batch.chapters,
            threads=batch.threads,
            secrets=batch.secrets,
            documents=batch.documents,
            timeline=batch.timeline,
            entities=entities if entities_changed else None,
            timeline_changes=timeline_changes,
            files=[r.info for r in results],
            by_kind=batch.by_kind,
            removed=[p for p, _ in removed],
        ),
        counts=counts,
        volumes=lambda: _volumes_update(book=book, root=root, batch=batch, full=full, known=known_volumes),
    )
    removed_numbers = written.removed_numbers
    new_numbers = {c.number for c in batch.chapters}
    report["chapters"] = {"updated": sorted(new_numbers), "removed": removed_numbers}
    issues += written.issues

    issues += _references_check(
        book=book,
        batch=batch,
        gone_threads=old_thread_ids - {t.thread_id for t in batch.threads},
        new_numbers=new_numbers,
        removed_numbers=removed_numbers,
    )
    report["warnings"] = [i.as_dict() for i in issues if i.level != ERROR]
    numbers: list[int] | None = sorted(new_numbers)
    if full and entities_changed:
        numbers = None  # aliases changed: mention-style indexers must look at every chapter again
    if numbers is None or numbers or removed_numbers:
        report["indexers"] = chapter_indexers_run(
            book=book, numbers=numbers, removed=removed_numbers, warnings=report["warnings"]
        )
        report["hooks"] = after_chapter_hooks_schedule(
            book=book, numbers=numbers, removed=removed_numbers, report=report
        )
    elif full:
        # Nothing to index, but the hooks still run: one that was killed after a previous sync's
        # commit left its work undone, and a rerun of that sync finds no changed file.
        report["hooks"] = after_chapter_hooks_schedule(book=book, numbers=[], removed=[], report=report)
    if full:
        # the journal's events a crashed writer left without their rows (core/journal.py), after the
        # files' rows and their indexers, as the rebuild does
        report["journal"] = journal_replay(book=book, root=root, warnings=report["warnings"], follow=True)
    canon_change_reporters_finish(started=reporters, report=report)


def _entity_order(results: list[FileResult]) -> list[FileResult]:
    """The order book_read uses: every entity file by path (cards under 设定/角色/ sort after 名册)."""
    return sorted(results, key=lambda r: r.info.path)


def _folder_name(path: str, volume: int | None) -> str:
    parts = path.split("/")
    name = ""
    for folder in parts[2:-1]:
        match = VOLUME_NAME.match(folder)
        if match and numeral_parse(match.group(1)) == volume:
            name = match.group(2).strip()
    return name
