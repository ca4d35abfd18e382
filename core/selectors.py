"""Reads of the core (books, chapters, outlines, timelines, settings documents, core reports).

Each read exists once, here; the REST endpoint and the ``story`` command are thin adapters over it
(declared in ``core/interfaces.py``). Every function takes ``book=`` and keyword-only
arguments, returns JSON-able data (or ``str`` for text reads), and raises a domain exception naming
what was not found or what was wrong with the input.
"""

from typing import Any

from django.db import connection
from django.db.models import Count, F, Max, Min, Q, QuerySet, Sum

from core.fingerprint import RICHNESS_WINDOW, fingerprints_sum
from core.models import Book, Chapter, Document, Fingerprint, Section, TimelineRow, Volume
from kernel.exceptions import InvalidInput, NotFound

# Limits of the text reads: an agent asks for a few hundred characters of a few chapters.
CHARS_DEFAULT = 500
CHARS_MAX = 20000
RECENT_DEFAULT = 3
RECENT_MAX = 50
RANGE_MAX = 500

CHAPTER_POSITIONS = tuple(Chapter.Position.values)
_CHAPTER_FIELDS = (
    "title",
    "volume",
    "perspective",
    "story_time",
    "chapter_position",
    "hook_type",
    "mood_position",
    "summary",
    "key_chapter",
)
_KNOWN_FRONT_MATTER = {*_CHAPTER_FIELDS, "threads", "word_count", "number"}


def book_get(*, slug: str) -> Book:
    """The book with this slug, or NotFound naming it."""
    book = _book_by_slug(slug)
    if book is None:
        raise NotFound(f"书籍 '{slug}' 不存在", extra={"book": slug})
    return book


# Every door's first query (each `story` process, MCP and REST call): building the ORM's statement, with its
# first-use set-up in a new process, was ~3 ms of a `story` read against ~0.5 ms in plain SQL (issue 29). The
# row is decoded as the ORM decodes it (the backend's converters, then the field's) and made a model by
# ``Book.from_db``, so the instance is the ORM's. The slug is unique: no ORDER BY.
_BOOK_FIELDS = Book._meta.concrete_fields
_BOOK_COLUMNS = ", ".join(f'"{field.column}"' for field in _BOOK_FIELDS)
_BOOK_SQL = f'SELECT {_BOOK_COLUMNS} FROM "{Book._meta.db_table}" WHERE "slug" = %s'


def _book_by_slug(slug: str) -> Book | None:
    with connection.cursor() as cursor:
        cursor.execute(_BOOK_SQL, [slug])
        row = cursor.fetchone()
    if row is None:
        return None
    values = []
    for field, value in zip(_BOOK_FIELDS, row, strict=True):
        column = field.get_col(Book._meta.db_table)
        for convert in (*connection.ops.get_db_converters(column), *field.get_db_converters(connection)):
            value = convert(value, column, connection)
        values.append(value)
    return Book.from_db(connection.alias, [field.attname for field in _BOOK_FIELDS], values)


def book_current_chapter(*, book: Book) -> int | None:
    """The highest finalized chapter: the 'now' that hang and accumulation times count from."""
    return book.chapters.aggregate(m=Max("number"))["m"]


def books_with_totals() -> QuerySet[Book]:
    """Every book by slug, each with ``n_chapters``, ``words`` (None without chapters) and ``current``
    (its highest chapter): the one listing of books, in one query (the API's list, the dashboard's cards)."""
    return Book.objects.annotate(
        n_chapters=Count("chapters"), words=Sum("chapters__word_count"), current=Max("chapters__number")
    ).order_by("slug")


def book_list() -> list[dict]:
    """Every book with its chapter count and current chapter."""
    return [
        {"slug": b.slug, "title": b.title, "genre": b.genre, "chapters": b.n_chapters, "current_chapter": b.current}
        for b in books_with_totals()
    ]


# ── input checks ────────────────────────────────────────────────────────────────────────────────


def _bounded(name: str, value: int, low: int, high: int) -> int:
    if value is None or value < low or value > high:
        raise InvalidInput(f"参数 {name} 必须在 {low} 到 {high} 之间（收到 {value}）", extra={name: value})
    return value


# ── chapters ────────────────────────────────────────────────────────────────────────────────────


def chapter_get(*, book: Book, number: int) -> Chapter:
    """The finalized chapter ``number``, or NotFound naming it."""
    chapter = Chapter.objects.filter(book=book, number=number).first()
    if chapter is None:
        raise NotFound(f"第{number}章不存在（《{book.title or book.slug}》）", extra={"chapter": number})
    return chapter


def volume_first_chapter(*, book: Book, volume: int | None) -> int | None:
    """The first chapter of a volume: its declared start (book.yaml), else its lowest finalized chapter."""
    if volume is None:
        return None
    start = Volume.objects.filter(book=book, number=volume).values_list("start_chapter", flat=True).first()
    if start is not None:
        return start
    return Chapter.objects.filter(book=book, volume=volume).aggregate(m=Min("number"))["m"]


def chapter_is_key(*, book: Book, chapter: Chapter) -> bool:
    """Whether a chapter is key (the seed's ``is_key_chapter``): ``key_chapter: true`` in its front matter,
    or the first chapter of its volume (inferred at query time, so a new volume's opening needs no mark)."""
    return chapter.key_chapter or chapter.number == volume_first_chapter(book=book, volume=chapter.volume)


def chapter_meta(*, book: Book, number: int) -> dict:
    """A chapter's front matter: the fields of the format plus ``extra`` (unknown keys, kept as written);
    ``key_chapter`` is also true for the first chapter of a volume (``chapter_is_key``)."""
    ch = chapter_get(book=book, number=number)
    data: dict[str, Any] = {"number": ch.number}
    for field in _CHAPTER_FIELDS:
        data[field] = getattr(ch, field)
    data["key_chapter"] = chapter_is_key(book=book, chapter=ch)
    data["threads"] = {"opens": list(ch.opens), "advances": list(ch.advances), "closes": list(ch.closes)}
    data["word_count"] = ch.word_count
    front_matter = ch.front_matter or {}
    data["extra"] = {k: front_matter[k] for k in sorted(front_matter) if k not in _KNOWN_FRONT_MATTER}
    return data


def chapter_body(*, book: Book, number: int) -> str:
    """A chapter's body, without front matter (entity tags already stripped)."""
    return chapter_get(book=book, number=number).body


def chapter_tail(*, book: Book, number: int, chars: int = CHARS_DEFAULT) -> str:
    """The last ``chars`` characters of a chapter's body (trailing whitespace ignored)."""
    _bounded("chars", chars, 1, CHARS_MAX)
    return chapter_get(book=book, number=number).body.rstrip()[-chars:]


def chapter_head(*, book: Book, number: int, chars: int = CHARS_DEFAULT) -> str:
    """The first ``chars`` characters of a chapter's body (leading whitespace ignored)."""
    _bounded("chars", chars, 1, CHARS_MAX)
    return chapter_get(book=book, number=number).body.lstrip()[:chars]


def chapter_summary(*, book: Book, number: int) -> str:
    """A chapter's ``summary`` front matter ('' when it has none)."""
    return chapter_get(book=book, number=number).summary


def chapter_summaries(*, book: Book, start: int, end: int) -> list[dict]:
    """``[{"number", "title", "summary"}]`` of the finalized chapters in [start, end] (at most 500)."""
    if start < 1 or end < start:
        raise InvalidInput(f"章节范围无效：{start}-{end}", extra={"start": start, "end": end})
    if end - start + 1 > RANGE_MAX:
        raise InvalidInput(
            f"章节范围过大：最多 {RANGE_MAX} 章（收到 {start}-{end}）", extra={"start": start, "end": end}
        )
    rows = Chapter.objects.filter(book=book, number__gte=start, number__lte=end).order_by("number")
    return [{"number": n, "title": t, "summary": s} for n, t, s in rows.values_list("number", "title", "summary")]


def chapter_recent_tails(
    *, book: Book, count: int = RECENT_DEFAULT, chars: int = CHARS_DEFAULT, before: int | None = None
) -> list[dict]:
    """The last ``chars`` characters of each of the ``count`` chapters before chapter ``before``
    (default: the newest finalized chapters), oldest first: ``[{"number", "title", "tail"}]``."""
    _bounded("count", count, 1, RECENT_MAX)
    _bounded("chars", chars, 1, CHARS_MAX)
    rows = Chapter.objects.filter(book=book)
    if before is not None:
        rows = rows.filter(number__lt=before)
    picked = list(rows.order_by("-number").values_list("number", "title", "body")[:count])
    return [{"number": n, "title": t, "tail": body.rstrip()[-chars:]} for n, t, body in reversed(picked)]


def chapter_list(*, book: Book, position: str | None = None, volume: int | None = None) -> list[dict]:
    """Chapters with a given ``chapter_position`` (推进 / 过渡 / 日常; all when omitted), optionally
    within one volume: ``[{"number", "title", "volume", "chapter_position"}]``."""
    rows = Chapter.objects.filter(book=book)
    if position:
        if position not in CHAPTER_POSITIONS:
            raise InvalidInput(
                f"未知的章节定位 '{position}'，可选：{'、'.join(CHAPTER_POSITIONS)}", extra={"position": position}
            )
        rows = rows.filter(chapter_position=position)
    if volume is not None:
        volume_get(book=book, number=volume)
        rows = rows.filter(volume=volume)
    fields = ("number", "title", "volume", "chapter_position")
    return [dict(zip(fields, r, strict=True)) for r in rows.order_by("number").values_list(*fields)]


# ── volumes and outlines ────────────────────────────────────────────────────────────────────────


def volume_get(*, book: Book, number: int) -> Volume:
    volume = Volume.objects.filter(book=book, number=number).first()
    if volume is None:
        raise NotFound(f"第{number}卷不存在（《{book.title or book.slug}》）", extra={"volume": number})
    return volume


def volume_list(*, book: Book) -> list[dict]:
    """``[{"number", "name", "start_chapter", "end_chapter", "chapters"}]``; ``chapters`` counts the
    finalized chapters of the volume."""
    counts = dict(
        Chapter.objects.filter(book=book, volume__isnull=False)
        .values_list("volume")
        .annotate(n=Count("id"))
        .values_list("volume", "n")
    )
    return [
        {
            "number": v.number,
            "name": v.name,
            "start_chapter": v.start_chapter,
            "end_chapter": v.end_chapter,
            "chapters": counts.get(v.number, 0),
        }
        for v in Volume.objects.filter(book=book).order_by("number")
    ]


def _document(*, book: Book, kind: str, key: str | None = None, label: str) -> Document:
    rows = Document.objects.filter(book=book, kind=kind)
    if key is not None:
        rows = rows.filter(key=key)
    document = rows.order_by("key").first()
    if document is None:
        raise NotFound(f"{label}不存在（《{book.title or book.slug}》）", extra={"document": label})
    return document


def _section(*, document: Document, heading: str, label: str) -> str:
    wanted = (heading or "").strip()
    sections = list(Section.objects.filter(document=document).order_by("order").values_list("heading", "body"))
    for name, body in sections:
        if name.strip() == wanted:
            return body
    folded = wanted.casefold()
    for name, body in sections:
        if name.strip().casefold() == folded:
            return body
    raise NotFound(
        f"{label}中没有“{wanted}”一节",
        extra={"section": wanted, "available": [name for name, _ in sections if name]},
    )


def document_section(*, document: Document, heading: str, label: str) -> str:
    """A ``##`` section of a settings document by heading (exact, then case-insensitive); NotFound
    lists the headings it has. ``label`` names the document in the message (e.g. 林风的角色卡)."""
    return _section(document=document, heading=heading, label=label)


def _document_text(document: Document) -> str:
    return document.body


def outline_section(*, book: Book, heading: str) -> str:
    """A ``##`` section of the 总纲 by heading (exact, then case-insensitive)."""
    document = _document(book=book, kind=Document.Kind.MASTER_OUTLINE, label="总纲")
    return _section(document=document, heading=heading, label="总纲")


def outline_ending(*, book: Book) -> str:
    """The 总纲's ``## 结局`` section."""
    return outline_section(book=book, heading="结局")


def volume_outline(*, book: Book, volume: int) -> str:
    """The whole 卷纲 of a volume (body without front matter)."""
    document = _document(book=book, kind=Document.Kind.VOLUME_OUTLINE, key=str(volume), label=f"第{volume}卷卷纲")
    return _document_text(document)


def volume_outline_section(*, book: Book, volume: int, heading: str) -> str:
    """A ``##`` section of a volume's 卷纲."""
    label = f"第{volume}卷卷纲"
    document = _document(book=book, kind=Document.Kind.VOLUME_OUTLINE, key=str(volume), label=label)
    return _section(document=document, heading=heading, label=label)


# ── timelines ───────────────────────────────────────────────────────────────────────────────────


def _timeline_rows(rows) -> list[dict]:
    return [
        {"chapter": r["chapter"], "story_time": r["story_time"], "event": r["event"], "present": list(r["present"])}
        for r in rows.values("chapter", "story_time", "event", "present")
    ]


# A book without volumes (no book.yaml ``volumes:``, no volume folders: a new or an imported book)
# counts as one volume, number 1, for the timeline reads; its timeline is 时间线/第1卷.md.
WHOLE_BOOK_VOLUME = 1


def _volumeless(*, book: Book) -> bool:
    return not Volume.objects.filter(book=book).exists()


def timeline_volume_check(*, book: Book, volume: int) -> None:
    """NotFound naming the volume unless the book has it (or it is the whole book of a book
    without volumes)."""
    if volume == WHOLE_BOOK_VOLUME and _volumeless(book=book):
        return
    volume_get(book=book, number=volume)


def _current_volume(*, book: Book) -> int:
    # The highest finalized chapter and its volume in one query.
    latest = Chapter.objects.filter(book=book).order_by("-number").values_list("number", "volume").first()
    if latest is None:
        raise NotFound(f"《{book.title or book.slug}》还没有定稿章节，无法确定当前卷", extra={"book": book.slug})
    current, volume = latest
    if volume is None:
        volume = (
            Volume.objects.filter(book=book, start_chapter__lte=current, end_chapter__gte=current)
            .values_list("number", flat=True)
            .first()
        )
    if volume is None and _volumeless(book=book):
        volume = WHOLE_BOOK_VOLUME
    if volume is None:
        raise NotFound(f"第{current}章不属于任何卷，无法确定当前卷", extra={"chapter": current})
    return volume


def timeline_volume(*, book: Book, volume: int) -> dict:
    """A volume's timeline: ``{"volume", "rows": [{"chapter", "story_time", "event", "present"}]}``
    (a book without volumes: volume 1 is the whole book)."""
    rows = _timeline_rows(TimelineRow.objects.filter(book=book, volume=volume).order_by("order"))
    if not rows:
        timeline_volume_check(book=book, volume=volume)
    return {"volume": volume, "rows": rows}


def timeline_current(*, book: Book) -> dict:
    """The timeline of the current volume (the volume of the highest finalized chapter)."""
    return timeline_volume(book=book, volume=_current_volume(book=book))


def timeline_recent(*, book: Book) -> list[dict]:
    """The previous and the current volume's timelines, oldest first: ``[{"volume", "rows"}, …]``."""
    current = _current_volume(book=book)
    previous = (
        Volume.objects.filter(book=book, number__lt=current)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    volumes = [v for v in (previous, current) if v is not None]
    return [timeline_volume(book=book, volume=v) for v in volumes]


def _cell(value: object) -> str:
    # a Markdown table cell: a | or a line break inside would split the row
    return str(value if value is not None else "").replace("|", "\\|").replace("\n", " ")


def timeline_markdown(answer: dict | list[dict]) -> str:
    """A timeline answer (one volume, the list of ``timeline-recent``, or ``timeline-character``'s) as the
    Markdown table of the book's own ``时间线/第N卷.md``: ``| 章 | 书内时间 | 事件 | 在场人物 |`` under a
    ``## 第N卷`` heading per volume (a character's: one table with a 卷 column)."""
    if isinstance(answer, dict) and "character" in answer:
        head, blocks = ["卷"], [(f"## {answer['character']} 在场的时间线", answer["rows"])]
    else:
        head = []
        blocks = [(f"## 第{t['volume']}卷", t["rows"]) for t in (answer if isinstance(answer, list) else [answer])]
    parts = []
    for title, rows in blocks:
        columns = [*head, "章", "书内时间", "事件", "在场人物"]
        lines = [title, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for r in rows:
            cells = [r["volume"]] if head else []
            cells += [r["chapter"], r["story_time"], r["event"], "、".join(r["present"])]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        if not rows:
            lines.append("| " + " | ".join(["—"] * (len(columns) - 2) + ["（没有时间线条目）", "—"]) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


# ── settings: worldview (the character reads live in entities.selectors: they replay state) ──


def worldview_section(*, book: Book, heading: str) -> str:
    """A ``##`` section of the worldview (设定/世界观.md)."""
    document = _document(book=book, kind=Document.Kind.WORLDVIEW, label="世界观")
    return _section(document=document, heading=heading, label="世界观")


# ── core reports ────────────────────────────────────────────────────────────────────────────────


def weak_hook_streak(*, book: Book) -> dict:
    """The trailing run of weak hooks (``hook_type`` ending in ``-弱``) up to the current chapter:
    ``{"current_chapter", "threshold", "streak", "chapters", "reported"}``; reported when
    streak ≥ the ``weak_hook_streak`` threshold."""
    threshold = book.threshold("weak_hook_streak")
    streak: list[int] = []
    for number, hook in (
        Chapter.objects.filter(book=book).order_by("-number").values_list("number", "hook_type").iterator()
    ):
        if not (hook or "").strip().endswith("-弱"):
            break
        streak.append(number)
    return {
        "current_chapter": book_current_chapter(book=book),
        "threshold": threshold,
        "streak": len(streak),
        "chapters": sorted(streak),
        "reported": len(streak) >= threshold,
    }


# Derived style features: name → (numerator count, denominator count, scale). Counts are the raw
# per-chapter keys of Fingerprint.features (core/fingerprint.py, docs/book-format.md); a
# range's ratio is sum(numerator) / sum(denominator), never an average of per-chapter ratios.
STYLE_FEATURES: dict[str, tuple[str, str, float]] = {
    "avg_sentence_length": ("chars", "sentences", 1.0),
    "avg_paragraph_length": ("chars", "paragraphs", 1.0),
    "dialogue_ratio": ("dialogue_chars", "chars", 1.0),
    "cjk_ratio": ("cjk_chars", "chars", 1.0),
    "exclamations_per_1k": ("exclamations", "chars", 1000.0),
    "questions_per_1k": ("questions", "chars", 1000.0),
    "ellipses_per_1k": ("ellipses", "chars", 1000.0),
    "commas_per_sentence": ("commas", "sentences", 1.0),
}
# Features that are not one ratio of two counts (docs/book-format.md, "Fingerprints"):
# sentence_length_variance — population variance of sentence lengths (characters²), from the
#   count, sum and sum of squares of the lengths, so a range's variance is exact;
# vocabulary_richness — mean type/token ratio of fixed windows of RICHNESS_WINDOW Chinese characters
#   (does not fall as a range grows, unlike a plain type/token ratio);
# common_phrase_ratio — share of four-character phrases that are one of their chapter's common
#   phrases (used three times or more in it).
DERIVED_FEATURES = ("sentence_length_variance", "vocabulary_richness", "common_phrase_ratio")
STYLE_FEATURE_NAMES = (*STYLE_FEATURES, *DERIVED_FEATURES)
STYLE_DRIFT_FLAG = 0.2  # |relative change| above which a feature is flagged
COMMON_PHRASES_SHOWN = 10


def _fingerprint_sum(*, book: Book, start: int, end: int) -> tuple[dict[str, float], int]:
    rows = Fingerprint.objects.filter(book=book, start_chapter__gte=start, end_chapter__lte=end)
    # Per-chapter rows only (start == end): ranges aggregate exactly by summing raw counts.
    features = list(rows.filter(start_chapter=F("end_chapter")).values_list("features", flat=True))
    return fingerprints_sum(features), len(features)


def fingerprint_features_derive(*, totals: dict[str, float]) -> dict[str, float]:
    """The style features (``STYLE_FEATURES``: ratios, rounded to 4 places) of summed raw
    fingerprint counts; a feature whose denominator is 0 or missing is left out."""
    out = {}
    for name, (num, den, scale) in STYLE_FEATURES.items():
        if num in totals and totals.get(den):
            out[name] = round(totals[num] / totals[den] * scale, 4)
    n = totals.get("sentence_lengths")
    if n:
        mean = totals["sentence_length_sum"] / n
        out["sentence_length_variance"] = round(max(0.0, totals["sentence_length_sq"] / n - mean * mean), 4)
    if totals.get("richness_windows"):
        out["vocabulary_richness"] = round(totals["richness_types"] / (totals["richness_windows"] * RICHNESS_WINDOW), 4)
    if totals.get("phrase_ngrams"):
        out["common_phrase_ratio"] = round(totals["phrase_repeats"] / totals["phrase_ngrams"], 4)
    return out


def _no_style_baseline(book: Book) -> NotFound:
    # Say how to fix it, with a range this book has: its first ten finalized chapters (or fewer).
    span = Chapter.objects.filter(book=book).aggregate(first=Min("number"), last=Max("number"))
    first = span["first"] or 1
    last = min(first + 9, span["last"] or first + 9)
    example = f"style_baseline: [{first}, {last}]"
    return NotFound(
        f"《{book.title or book.slug}》的 book.yaml 没有设置 style_baseline（文风基线：以哪几章的文风为准），"
        f"无法比较文风漂移。请在书籍文件夹的 book.yaml 里加一行，例如：{example}"
        f"（以第{first}–{last}章为基线），然后运行 sync。",
        extra={"book": book.slug, "field": "style_baseline", "example": example},
    )


def _common_phrases(totals: dict) -> list[dict]:
    per = 10_000 / totals["cjk_chars"] if totals.get("cjk_chars") else 0.0
    return [
        {"phrase": phrase, "count": count, "per_10k": round(count * per, 2)}
        for phrase, count in list(totals.get("phrases", {}).items())[:COMMON_PHRASES_SHOWN]
    ]


def style_drift(*, book: Book, last: int | None = None) -> dict:
    """The style of the last ``last`` chapters (default: as many as the baseline) against the
    baseline range of book.yaml, feature by feature: ``{"baseline": {"start", "end", "chapters"},
    "current": {…}, "features": [{"feature", "baseline", "current", "change", "drifted"}]}``.
    ``change`` is (current − baseline) / baseline; drifted when |change| > 0.2."""
    if book.style_baseline_start is None or book.style_baseline_end is None:
        raise _no_style_baseline(book)
    base_start, base_end = book.style_baseline_start, book.style_baseline_end
    size = last if last is not None else (base_end - base_start + 1 or 10)
    _bounded("last", size, 1, RANGE_MAX * 10)
    current = book_current_chapter(book=book)
    if current is None:
        raise NotFound(f"《{book.title or book.slug}》还没有定稿章节", extra={"book": book.slug})
    cur_start = max(1, current - size + 1)
    base_totals, base_n = _fingerprint_sum(book=book, start=base_start, end=base_end)
    cur_totals, cur_n = _fingerprint_sum(book=book, start=cur_start, end=current)
    base = fingerprint_features_derive(totals=base_totals)
    cur = fingerprint_features_derive(totals=cur_totals)
    features = []
    for name in STYLE_FEATURE_NAMES:
        if name not in base or name not in cur:
            continue
        change = round((cur[name] - base[name]) / base[name], 4) if base[name] else None
        features.append(
            {
                "feature": name,
                "baseline": base[name],
                "current": cur[name],
                "change": change,
                "drifted": change is not None and abs(change) > STYLE_DRIFT_FLAG,
            }
        )
    base_phrases, cur_phrases = _common_phrases(base_totals), _common_phrases(cur_totals)
    return {
        "baseline": {"start": base_start, "end": base_end, "chapters": base_n},
        "current": {"start": cur_start, "end": current, "chapters": cur_n},
        "features": features,
        "common_phrases": {
            "baseline": base_phrases,
            "current": cur_phrases,
            # The current range's common phrases the baseline never used three times in a chapter.
            "new": [p["phrase"] for p in cur_phrases if p["phrase"] not in base_totals.get("phrases", {})],
        },
    }


def book_stats(*, book: Book) -> dict:
    """Counts of the book: chapters, volumes, characters of text, threads by status, secrets,
    entities by type, current chapter."""
    chapter_totals = Chapter.objects.filter(book=book).aggregate(
        n=Count("id"), text=Sum("word_count"), current=Max("number")
    )
    threads = dict(book.threads.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    entities = dict(
        book.entities.filter(archived=False).values_list("type").annotate(n=Count("id")).values_list("type", "n")
    )
    secrets = book.secrets.aggregate(total=Count("id"), unknown=Count("id", filter=Q(reader_knows=False)))
    n_chapters = chapter_totals["n"] or 0
    text = chapter_totals["text"] or 0
    return {
        "title": book.title,
        "current_chapter": chapter_totals["current"],
        "chapters": n_chapters,
        "volumes": book.volumes.count(),
        "characters_of_text": text,
        "average_chapter_length": round(text / n_chapters) if n_chapters else 0,
        "threads": {"total": sum(threads.values()), **{s: threads.get(s, 0) for s in ("进行", "已收尾", "已放弃")}},
        "secrets": {"total": secrets["total"], "reader_unknown": secrets["unknown"]},
        "characters": entities.get("角色", 0),
        "entities": {t: entities.get(t, 0) for t in ("角色", "地点", "物品", "势力", "招式")},
        "timeline_rows": book.timeline_rows.count(),
    }
