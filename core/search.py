"""Full-text search over a book's chapters: keyword (substring) and regular expression.

Why an index of our own: a book of thousands of chapters is millions of Chinese characters, and
Chinese has no word boundaries, so an ordinary word tokenizer finds nothing useful. Every chapter
body is split into lines and stored in ``webnovel_search_line`` (one row per non-blank line, with
its chapter and 1-based line number inside the body). On SQLite an external-content FTS5 table with
the ``trigram`` tokenizer indexes those lines (``columnsize=0``, migration 0017: nothing ranks by bm25, so
no token count is stored per line); on PostgreSQL a ``pg_trgm`` GIN index does. Both
answer a substring query of ≥ 3 characters from the index; a 1–2 character query is a bounded
scan of the line table (still ordered by chapter and line, stopping at ``limit``).

The tables are created by migrations 0002 and 0006 (vendor-conditional SQL); they are kept up to
date by ``search_index_update``, the chapter indexer the core registers in its ``AppConfig.ready()``
(kernel/indexing.py), which the rebuilder calls inside its transaction.
It writes the FTS5 table in bulk (no per-row triggers: an ``INSERT … SELECT`` of the new lines,
the FTS ``'delete'`` command for removed ones), and ``webnovel_search_chapter`` records the content
hash each chapter was indexed from, so a full rebuild re-indexes only the chapters that changed
(a 3,000-chapter book: ~6 s cold, well under a second when nothing changed; see bench/README.md).
A book that has chapters but no indexed lines (e.g. rows written by hand) is indexed on first search.

Regular expressions run in Python with the ``regex`` module, whose ``timeout=`` stops
catastrophic backtracking: a pattern is capped in length, the whole search has a time budget,
and either limit answers a clear 422 instead of hanging a worker.
"""

import time
from collections.abc import Iterable

import regex
from django.db import connection, transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from core.models import Book, Chapter
from kernel.exceptions import InvalidInput
from kernel.recall import semantic_get

LINE_TABLE = "webnovel_search_line"
FTS_TABLE = "webnovel_search_fts"
CHAPTER_TABLE = "webnovel_search_chapter"  # (book, chapter) → the content hash it was indexed from
INDEX_FORMAT = "1"  # bump when the stored lines change shape: every chapter is re-indexed once

SEARCH_DEFAULT_LIMIT = 50
SEARCH_MAX_LIMIT = 500
QUERY_MAX_LENGTH = 200
REGEX_MAX_LENGTH = 1000
REGEX_TIME_BUDGET = 2.0  # seconds for one whole regex search, all chapters together
CONTEXT_CHARS = 60  # characters kept on each side of a hit inside a long line
_FTS_MIN_CHARS = 3  # the trigram index needs at least one whole trigram
# Stored after every indexed line: a 2-character query that ends a line still forms a trigram
# (e.g. "林风\n"), so 2-character queries are answered from the index too (see _short_match).
LINE_END = "\n"
FTS_HASHSIZE = 16 << 20  # bytes of pending terms FTS5 holds before writing a segment (see _lines_add)
FTS_BULK_CHAPTERS = 200  # from this many chapters at once, the bulk insert uses FTS_HASHSIZE
VOCAB_TABLE = "webnovel_search_vocab"  # a per-connection fts5vocab view of the FTS terms
_SHORT_TERMS_MAX = 400  # above this many trigrams, a 2-character query scans the lines instead


def body_lines(body: str) -> list[tuple[int, str]]:
    """The (1-based line number, text) of the non-blank lines of a chapter body: what is indexed."""
    return [(i, text) for i, text in enumerate(body.split("\n"), start=1) if text.strip()]


def _chunks(values: list[int], size: int = 500):
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _index_key(content_hash: str) -> str:
    # Versioned, so that a change to how lines are stored re-indexes every chapter once.
    return f"{INDEX_FORMAT}:{content_hash}"


def _lines_delete(cur, *, book_id: int, chapters: list[int] | None) -> None:
    """Remove the indexed lines of ``chapters`` (every chapter of the book when None)."""
    groups = (
        [("", [])]
        if chapters is None
        else [(f" AND chapter IN ({', '.join(['%s'] * len(c))})", c) for c in _chunks(chapters)]
    )
    for where, params in groups:
        if connection.vendor == "sqlite":
            # External content: the FTS table must be told the old text of every row it forgets.
            cur.execute(
                f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rowid, text) "
                f"SELECT 'delete', id, text FROM {LINE_TABLE} WHERE book_id = %s{where}",
                [book_id, *params],
            )
        cur.execute(f"DELETE FROM {LINE_TABLE} WHERE book_id = %s{where}", [book_id, *params])
        cur.execute(f"DELETE FROM {CHAPTER_TABLE} WHERE book_id = %s{where}", [book_id, *params])


TRGM_INDEX = "webnovel_search_line_trgm"  # migration 0002's pg_trgm GIN index
_WRITER_LOCK = 0x5EA4C41D  # PostgreSQL advisory lock key of search_index_update


def _lines_write(cur, *, book: Book, todo: list[int]) -> int:
    """Write the lines of chapters ``todo``, 200 chapters at a time (each batch of bodies is read
    whole before writing: on PostgreSQL a COPY holds the connection, so no cursor may stream
    meanwhile)."""
    rebuild_index = False
    if connection.vendor == "postgresql":
        # Into an empty table (a cold full index) the GIN index is dropped and built once afterwards:
        # ~2× faster than maintaining it line by line (3,000 chapters: ~7 s instead of ~15 s). Its
        # exclusive lock blocks nobody, there being no other book's lines to search.
        cur.execute(f"SELECT 1 FROM {LINE_TABLE} LIMIT 1")
        rebuild_index = cur.fetchone() is None
        if rebuild_index:
            cur.execute(f"DROP INDEX IF EXISTS {TRGM_INDEX}")
    chapters = Chapter.objects.filter(book=book).order_by("number").values_list("number", "body")
    written = 0
    for chunk in _chunks(todo, 200):
        rows = [
            (book.pk, number, line, text + LINE_END)
            for number, body in chapters.filter(number__in=chunk)
            for line, text in body_lines(body)
        ]
        if connection.vendor == "postgresql":
            with cur.copy(f"COPY {LINE_TABLE} (book_id, chapter, line, text) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            cur.executemany(f"INSERT INTO {LINE_TABLE} (book_id, chapter, line, text) VALUES (%s, %s, %s, %s)", rows)
        written += len(rows)
    if rebuild_index:
        cur.execute(f"CREATE INDEX {TRGM_INDEX} ON {LINE_TABLE} USING gin (text gin_trgm_ops)")
    return written


def search_index_update(*, book: Book, numbers: list[int] | None = None, removed: list[int] | None = None) -> int:
    """(Re)index the lines of chapters ``numbers`` and drop ``removed``; with ``numbers=None`` (a full
    rebuild) every chapter whose content hash differs from the one it was indexed from, and drop the
    chapters that are gone.

    Called inside the rebuild / finalize transaction; returns how many lines were written."""
    with transaction.atomic(), connection.cursor() as cur:
        if connection.vendor == "postgresql":
            # One index writer at a time (SQLite serializes writers anyway): two first rebuilds would
            # otherwise both see an empty table and deadlock dropping the GIN index (_lines_write).
            cur.execute("SELECT pg_advisory_xact_lock(%s)", [_WRITER_LOCK])
        cur.execute(f"SELECT 1 FROM {LINE_TABLE} WHERE book_id = %s LIMIT 1", [book.pk])
        has_lines = cur.fetchone() is not None
        cur.execute(f"SELECT 1 FROM {CHAPTER_TABLE} WHERE book_id = %s LIMIT 1", [book.pk])
        recorded = cur.fetchone() is not None
        if numbers is not None and (recorded or not has_lines):
            # A finalize / sync of a few chapters: look at those alone (the cost must not grow with the book).
            named = set(numbers) | set(removed or [])
            hashes = dict(Chapter.objects.filter(book=book, number__in=named).values_list("number", "content_hash"))
            todo = sorted(set(numbers) & set(hashes))
            gone = sorted(named - set(hashes))
            if has_lines or recorded:
                _lines_delete(cur, book_id=book.pk, chapters=sorted(set(todo) | set(gone)))
            return _lines_add(cur, book=book, todo=todo, hashes=hashes)
        current = dict(Chapter.objects.filter(book=book).values_list("number", "content_hash"))
        cur.execute(f"SELECT chapter, content_hash FROM {CHAPTER_TABLE} WHERE book_id = %s", [book.pk])
        indexed = dict(cur.fetchall())
        if numbers is None or (has_lines and not indexed):
            # A full pass (also when the lines predate the per-chapter record). A chapter without a
            # content hash (rows written by hand) is always re-indexed.
            todo = sorted(n for n, h in current.items() if not h or indexed.get(n) != _index_key(h))
            gone = sorted(set(indexed) - set(current))
        else:
            todo = sorted(set(numbers) & set(current))
            gone = sorted((set(numbers) | set(removed or [])) - set(current))
        stale = sorted(set(todo) | set(gone))
        if has_lines or indexed:
            # Every indexed chapter is stale (a cold or total reindex): one book-wide delete.
            everything = set(indexed) <= set(stale)
            _lines_delete(cur, book_id=book.pk, chapters=None if everything else stale)
        return _lines_add(cur, book=book, todo=todo, hashes=current)


def _lines_add(cur, *, book: Book, todo: list[int], hashes: dict[int, str]) -> int:
    """Index the lines of chapters ``todo`` (their old lines already deleted) and record the content
    hash each was indexed from (``hashes``: number → the chapter's content hash); returns how many
    lines were written."""
    if not todo:
        return 0
    if connection.vendor == "sqlite":
        cur.execute(f"SELECT COALESCE(MAX(id), 0) FROM {LINE_TABLE}")
        last_id = cur.fetchone()[0]
    written = _lines_write(cur, book=book, todo=todo)
    if connection.vendor == "sqlite":
        if len(todo) >= FTS_BULK_CHAPTERS:
            # FTS5 keeps the terms of the rows being inserted in memory and writes a segment each time
            # they pass 'hashsize' (1 MB by default), merging segments as they pile up: 16 MB writes
            # 3,000 chapters in ~20 % less CPU for ~25 MB more memory. A setting of the index (kept in
            # its config table), not of what it holds: the same lines answer the same queries.
            cur.execute(f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rank) VALUES ('hashsize', %s)", [FTS_HASHSIZE])
        # One bulk insert into FTS5 instead of a trigger call per line: 3–4× cheaper. Rowids of an
        # INTEGER PRIMARY KEY grow past the largest, so the new lines are exactly those above it.
        cur.execute(f"INSERT INTO {FTS_TABLE} (rowid, text) SELECT id, text FROM {LINE_TABLE} WHERE id > %s", [last_id])
    cur.executemany(
        f"INSERT INTO {CHAPTER_TABLE} (book_id, chapter, content_hash) VALUES (%s, %s, %s)",
        [(book.pk, n, _index_key(hashes.get(n) or "")) for n in todo],
    )
    return written


def search_chapters_containing(*, book: Book, terms: Iterable[str]) -> set[int] | None:
    """The chapters of ``book`` whose body contains one of ``terms`` (in one line: the terms hold no
    line break), answered from the line index; a superset is possible (SQLite's trigram index and its
    LIKE fold ASCII case), a chapter missing is not. None when the index does not hold every chapter
    as its body is now (never built, or rows written without the indexer): the caller scans instead."""
    terms = sorted({t for t in terms if t})
    if not terms:
        return set()
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT COUNT(*) FROM {Chapter._meta.db_table} c LEFT JOIN {CHAPTER_TABLE} s "
            "ON s.book_id = c.book_id AND s.chapter = c.number AND s.content_hash = %s || c.content_hash "
            "WHERE c.book_id = %s AND (s.chapter IS NULL OR c.content_hash = '')",
            [f"{INDEX_FORMAT}:", book.pk],
        )
        if cur.fetchone()[0]:
            return None
        found: set[int] = set()
        scanned = terms
        if connection.vendor == "sqlite":
            expressions, scanned = [], []
            for term in terms:
                if len(term) >= _FTS_MIN_CHARS:
                    expressions.append('"' + term.replace('"', '""') + '"')
                    continue
                short = _short_match(term) if len(term) == _FTS_MIN_CHARS - 1 else None
                if short is None:
                    scanned.append(term)  # one character, or too many trigrams: the line table is scanned
                elif short:
                    expressions.append(short)
            if expressions:
                cur.execute(
                    f"SELECT DISTINCT l.chapter FROM {LINE_TABLE} l WHERE l.id IN "
                    f"(SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s) AND +l.book_id = %s",
                    [" OR ".join(expressions), book.pk],
                )
                found.update(row[0] for row in cur.fetchall())
        for chunk in range(0, len(scanned), 50):
            part = scanned[chunk : chunk + 50]
            # PostgreSQL: LIKE uses the pg_trgm index from three characters on
            escape = " ESCAPE '\\'" if connection.vendor == "sqlite" else ""
            cur.execute(
                f"SELECT DISTINCT chapter FROM {LINE_TABLE} WHERE book_id = %s AND ("
                + " OR ".join([f"text LIKE %s{escape}"] * len(part))
                + ")",
                [book.pk, *("%" + _like_escape(t) + "%" for t in part)],
            )
            found.update(row[0] for row in cur.fetchall())
    return found


def search_index_drop(*, book_id: int) -> None:
    """Forget every indexed line of a book (the book row is being deleted)."""
    with transaction.atomic(), connection.cursor() as cur:
        _lines_delete(cur, book_id=book_id, chapters=None)


@receiver(post_delete, sender=Book, dispatch_uid="core.search.book_deleted")
def _book_deleted(sender, instance: Book, **kwargs) -> None:
    # Cache invalidation: the line table has no foreign key (so that flushes and truncates of
    # the book table never trip over it), so a deleted book's lines are dropped here.
    search_index_drop(book_id=instance.pk)


def _index_ensure(*, book: Book) -> None:
    with connection.cursor() as cur:
        cur.execute(f"SELECT 1 FROM {LINE_TABLE} WHERE book_id = %s LIMIT 1", [book.pk])
        indexed = cur.fetchone() is not None
    if not indexed and book.chapters.exclude(body="").exists():
        search_index_update(book=book)


def _limit_check(limit: int) -> int:
    if limit < 1 or limit > SEARCH_MAX_LIMIT:
        raise InvalidInput(f"limit 必须在 1 到 {SEARCH_MAX_LIMIT} 之间（收到 {limit}）", extra={"limit": limit})
    return limit


def context_snippet(text: str, start: int, end: int) -> str:
    """The line, or ±60 characters around [start, end) of a long line, with … where cut."""
    if len(text) <= 2 * CONTEXT_CHARS + (end - start):
        return text
    left = max(0, start - CONTEXT_CHARS)
    right = min(len(text), end + CONTEXT_CHARS)
    return ("…" if left > 0 else "") + text[left:right] + ("…" if right < len(text) else "")


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _short_match(query: str) -> str | None:
    """An FTS5 expression for the lines containing a 2-character ``query``: every indexed trigram
    that starts with it (OR-ed); '' when there is none; None when there are too many to be worth it."""
    low = query.lower()  # the trigram tokenizer folds case
    with connection.cursor() as cur:
        cur.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{VOCAB_TABLE} USING fts5vocab(main, {FTS_TABLE}, 'row')")
        cur.execute(
            f"SELECT term FROM temp.{VOCAB_TABLE} WHERE term >= %s AND term < %s LIMIT {_SHORT_TERMS_MAX + 1}",
            [low, low + "\U0010ffff"],
        )
        terms = [row[0] for row in cur.fetchall()]
    if len(terms) > _SHORT_TERMS_MAX:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _match(*, book: Book, query: str) -> tuple[str, list, bool]:
    """The FROM … WHERE … of the lines of ``book`` containing ``query``, its parameters, and whether
    the trigram index drives it (SQLite FTS5)."""
    if connection.vendor == "sqlite":
        expression = None
        if len(query) >= _FTS_MIN_CHARS:
            expression = '"' + query.replace('"', '""') + '"'
        elif len(query) == _FTS_MIN_CHARS - 1:
            expression = _short_match(query)
            if expression == "":
                return f"FROM {LINE_TABLE} l WHERE 0 = 1", [], True
        if expression is not None:
            # The FTS match drives the query: its rowids are looked up by primary key. The unary ``+``
            # keeps SQLite from walking the whole (book, chapter, line) index and testing each line
            # against the match list instead (20–40× slower for a rare phrase).
            where = f"l.id IN (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s) AND +l.book_id = %s"
            return f"FROM {LINE_TABLE} l WHERE {where}", [expression, book.pk], True
    like = "%" + _like_escape(query) + "%"
    if connection.vendor == "postgresql":
        if query.lower() == query.upper():
            # No letter case (Chinese): LIKE is the same match as ILIKE, and 2–3× cheaper; below
            # a trigram's length pg_trgm cannot help, and strpos is the fastest scan.
            if len(query) < _FTS_MIN_CHARS:
                return f"FROM {LINE_TABLE} l WHERE l.book_id = %s AND strpos(l.text, %s) > 0", [book.pk, query], False
            return f"FROM {LINE_TABLE} l WHERE l.book_id = %s AND l.text LIKE %s", [book.pk, like], False
        return f"FROM {LINE_TABLE} l WHERE l.book_id = %s AND l.text ILIKE %s", [book.pk, like], False
    # A single character (or a 2-character query with too many trigrams): scan the line table.
    return f"FROM {LINE_TABLE} l WHERE l.book_id = %s AND l.text LIKE %s ESCAPE '\\'", [book.pk, like], False


_ORDERED_SCAN_FROM = 2000  # matching lines above which the first hits are found in index order


def _keyword_rows(*, book: Book, query: str, limit: int) -> tuple[int, list[tuple[int, int, str]]]:
    """(total matching lines, the first ``limit`` of them as (chapter, line, text))."""
    clause, params, indexed = _match(book=book, query=query)
    with connection.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) {clause}", params)
        total = cur.fetchone()[0]
        if not indexed:
            # No trigram to look up (a single character): the count is one pass over the lines; the
            # first hits come from walking the (book, chapter, line) index, which stops at ``limit``
            # (a window COUNT(*) OVER () in the same query would fetch every matching line first).
            if not total:
                return 0, []
            cur.execute(
                f"SELECT l.chapter, l.line, l.text {clause} ORDER BY l.chapter, l.line LIMIT {int(limit)}", params
            )
            return total, [(c, n, text.rstrip(LINE_END)) for c, n, text in cur.fetchall()]
        if total > _ORDERED_SCAN_FROM:
            # A phrase on thousands of lines: sorting them all to keep 50 costs more than walking
            # the lines in (chapter, line) order against the match list and stopping at ``limit``.
            clause = clause.replace("+l.book_id", "l.book_id")
        cur.execute(f"SELECT l.chapter, l.line, l.text {clause} ORDER BY l.chapter, l.line LIMIT {int(limit)}", params)
        rows = cur.fetchall() if total else []
    return total, [(c, n, text.rstrip(LINE_END)) for c, n, text in rows]


def search_keyword(*, book: Book, q: str, limit: int = SEARCH_DEFAULT_LIMIT) -> dict:
    """Lines containing ``q`` (a literal substring, case-insensitive for Latin letters), in chapter
    order: ``{"query", "total", "hits": [{"chapter", "line", "context"}]}``."""
    query = (q or "").strip()
    if not query:
        raise InvalidInput("搜索词不能为空", extra={"q": q})
    if len(query) > QUERY_MAX_LENGTH:
        raise InvalidInput(
            f"搜索词过长：最多 {QUERY_MAX_LENGTH} 字（收到 {len(query)} 字）", extra={"length": len(query)}
        )
    if "\x00" in query:
        # No line holds one, and SQLite's FTS5 query parser stops at it ("unterminated string").
        raise InvalidInput("搜索词不能含 NUL 字符（\\x00）", extra={"q": query.replace("\x00", "\\x00")[:100]})
    _limit_check(limit)
    _index_ensure(book=book)
    total, rows = _keyword_rows(book=book, query=query, limit=limit)
    folded = query.casefold()
    hits = []
    for chapter, line, text in rows:
        at = text.casefold().find(folded)
        at = max(at, 0)
        hits.append({"chapter": chapter, "line": line, "context": context_snippet(text, at, at + len(query))})
    return {"query": query, "total": total, "hits": hits}


SEARCH_MODES = ("keyword", "semantic", "hybrid")
_MODE_LABELS = {"keyword": "关键词", "semantic": "语义", "hybrid": "混合（BM25 + 向量）"}


def search_read(*, book: Book, q: str, mode: str | None = None, limit: int = SEARCH_DEFAULT_LIMIT) -> dict:
    """The ``search`` read: ``mode`` keyword (lines containing ``q``, in chapter order), semantic (the
    chapters whose passages mean what ``q`` says, by the recall app's vectors) or hybrid (reciprocal-rank
    fusion of BM25 and the vectors); omitted, hybrid when the book has vectors, else keyword. Semantic
    recall unavailable (off, model missing, not embedded): the keyword answer, with the reason in
    ``note``. Hits name the ``signals`` that found them."""
    if mode is not None and mode not in SEARCH_MODES:
        raise InvalidInput(f"mode 必须是 {' | '.join(SEARCH_MODES)} 之一（收到 {mode}）", extra={"mode": mode})
    note = ""
    if mode != "keyword":
        provider = semantic_get()
        ok, note = provider.status(book=book) if provider is not None else (False, "语义检索未安装（recall 应用）")
        if ok:
            try:
                return _semantic_answer(
                    book=book, q=q, mode=mode or "hybrid", limit=limit, note=note, provider=provider
                )
            except InvalidInput:
                raise
            except Exception as exc:  # noqa: BLE001 — a broken model or store never breaks a search: keywords answer
                ok, note = False, f"语义检索失败（{type(exc).__name__}: {exc}）"
                mode = mode or "hybrid"
        if mode is None:
            note = ""  # keyword is the default when there are no vectors: nothing fell back
        else:
            note = f"{note}；已按关键词搜索"
    answer = search_keyword(book=book, q=q, limit=limit)
    hits = [{**hit, "signals": ["keyword"]} for hit in answer["hits"]]
    return {"query": answer["query"], "mode": "keyword", "note": note, "total": answer["total"], "hits": hits}


def _semantic_answer(*, book: Book, q: str, mode: str, limit: int, note: str, provider) -> dict:
    query = (q or "").strip()
    if not query:
        raise InvalidInput("搜索词不能为空", extra={"q": q})
    if len(query) > QUERY_MAX_LENGTH:
        raise InvalidInput(
            f"搜索词过长：最多 {QUERY_MAX_LENGTH} 字（收到 {len(query)} 字）", extra={"length": len(query)}
        )
    _limit_check(limit)
    found = provider.search(book=book, query=query, mode=mode, limit=limit)
    hits = []
    for hit in found:
        text = hit["text"].replace("\n", " ")
        context = text if len(text) <= 2 * CONTEXT_CHARS else text[: 2 * CONTEXT_CHARS] + "…"
        hits.append({"chapter": hit["chapter"], "line": hit["line"], "context": context, "signals": hit["signals"]})
    label = _MODE_LABELS[mode]
    return {"query": query, "mode": mode, "note": note or f"{label}检索", "total": len(hits), "hits": hits}


def search_regex(*, book: Book, pattern: str, limit: int = SEARCH_DEFAULT_LIMIT) -> dict:
    """Lines matching the regular expression ``pattern`` (``regex`` syntax, per line, ``^``/``$`` at
    line ends), in chapter order: ``{"pattern", "total", "hits": [{"chapter", "line", "context"}]}``.
    ``total`` counts matching lines. A pattern over 1,000 characters, an invalid pattern, or a search
    over its 2-second budget is a 422."""
    if not pattern:
        raise InvalidInput("正则表达式不能为空", extra={"pattern": pattern})
    if len(pattern) > REGEX_MAX_LENGTH:
        raise InvalidInput(
            f"正则表达式过长：最多 {REGEX_MAX_LENGTH} 字符（收到 {len(pattern)}）", extra={"length": len(pattern)}
        )
    _limit_check(limit)
    deadline = time.monotonic() + REGEX_TIME_BUDGET
    try:
        compiled = regex.compile(pattern, regex.MULTILINE)
    except (regex.error, TimeoutError, OverflowError, RecursionError) as exc:
        raise InvalidInput(f"正则表达式无效：{exc}", extra={"pattern": pattern[:100]}) from exc
    hits: list[dict] = []
    total = 0
    chapters = Chapter.objects.filter(book=book).order_by("number").values_list("number", "body")
    try:
        for number, body in chapters.iterator(chunk_size=200):
            last_line = 0
            line = 1
            scanned = 0
            for match in compiled.finditer(body, timeout=max(0.001, deadline - time.monotonic())):
                line += body.count("\n", scanned, match.start())
                scanned = match.start()
                if line == last_line:
                    continue
                line_start = body.rfind("\n", 0, match.start()) + 1
                line_end = body.find("\n", match.start())
                text = body[line_start : line_end if line_end >= 0 else len(body)]
                if not text.strip():
                    continue  # blank lines are not indexed for keywords either
                last_line = line
                total += 1
                if len(hits) < limit:
                    start = match.start() - line_start
                    end = min(len(text), start + len(match.group(0)))
                    hits.append({"chapter": number, "line": line, "context": context_snippet(text, start, end)})
            if time.monotonic() > deadline:
                raise TimeoutError
    except TimeoutError as exc:
        raise InvalidInput(
            f"正则表达式搜索超时（超过 {REGEX_TIME_BUDGET:g} 秒），请收窄表达式",
            extra={"pattern": pattern[:100], "timeout_seconds": REGEX_TIME_BUDGET},
        ) from exc
    return {"pattern": pattern, "total": total, "hits": hits}
